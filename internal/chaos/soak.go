package chaos

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// Config is a soak's knobs (tools/chaos/run.sh passes them as -chaos.*).
type Config struct {
	Duration     time.Duration `json:"duration"`
	Replicas     int           `json:"replicas"`
	Workers      int           `json:"workers"`       // callers, half gRPC, half MCP
	Pause        time.Duration `json:"pause"`         // each caller's pause between calls
	KeyedShare   float64       `json:"keyed_share"`   // share of calls with an idempotency key
	KeyRetry     time.Duration `json:"key_retry"`     // how long a keyed call is retried
	LimitedShare float64       `json:"limited_share"` // share of calls to echo_limited
	MCPToolShare float64       `json:"mcp_tool_share"`
	Limit        limit         `json:"limit"`
	Faults       []string      `json:"faults"` // the schedule's cycle
	Outage       time.Duration `json:"outage"` // how long each fault lasts
	Gap          time.Duration `json:"gap"`    // quiet time before each fault
	Warmup       time.Duration `json:"warmup"` // calls before the first fault
}

// CIConfig is the CI-sized soak: one cycle of the five faults in about
// 80 seconds.
func CIConfig() Config {
	return Config{Duration: 80 * time.Second, Replicas: 3, Workers: 8, Pause: 20 * time.Millisecond,
		KeyedShare: 0.3, KeyRetry: 8 * time.Second, LimitedShare: 0.15, MCPToolShare: 0.3,
		Limit: limit{Rate: 5, Burst: 10}, Faults: DefaultFaults, Outage: 7 * time.Second, Gap: 5 * time.Second,
		Warmup: 3 * time.Second}
}

// Run runs a soak with the gateway binary bin and returns its report.
func Run(t testing.TB, bin string, cfg Config) *Report {
	t.Helper()
	f := startFleet(t, bin, cfg.Replicas, cfg.Limit)
	c, err := newCallers(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(cfg.Duration))
	defer cancel()
	callers := make(chan struct{})
	go func() { c.run(ctx, cfg.Workers); close(callers) }()
	var faults []*Fault
	if wait(ctx, cfg.Warmup) {
		faults = schedule(ctx, t, f, c, cfg.Faults, cfg.Outage, cfg.Gap)
	}
	<-callers
	end := time.Now()
	// Every replica's audit as written: stop them first, so nothing is
	// still being written while it is read (lines of answered calls were
	// written before their answers).
	for _, r := range f.Replicas {
		r.Kill()
	}
	var audits []*auditIndex
	for _, r := range f.Replicas {
		a, err := readAudit(r.AuditPath)
		if err != nil {
			t.Fatalf("chaos: read %s: %v", r.AuditPath, err)
		}
		audits = append(audits, a)
	}
	return analyse(cfg, f, c, faults, start, end, audits)
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
