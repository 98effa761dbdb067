package chaos

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The knobs; their defaults are CIConfig's.
var (
	flagGateway  = flag.String("chaos.gateway", "", "the gateway binary (default: built from ./cmd/flowdrop-gateway)")
	flagDuration = flag.Duration("chaos.duration", CIConfig().Duration, "how long the soak runs")
	flagWorkers  = flag.Int("chaos.workers", CIConfig().Workers, "callers (half gRPC, half MCP)")
	flagPause    = flag.Duration("chaos.pause", CIConfig().Pause, "each caller's pause between calls")
	flagKeyed    = flag.Float64("chaos.keyed", CIConfig().KeyedShare, "share of calls with an idempotency key")
	flagLimited  = flag.Float64("chaos.limited", CIConfig().LimitedShare, "share of calls to the rate-limited tool")
	flagMCPTool  = flag.Float64("chaos.mcp-tool", CIConfig().MCPToolShare, "share of calls to the MCP upstream's tool")
	flagRate     = flag.Float64("chaos.rate", CIConfig().Limit.Rate, "the rate-limited tool's fleet rate, per second")
	flagBurst    = flag.Int("chaos.burst", CIConfig().Limit.Burst, "the rate-limited tool's burst")
	flagFaults   = flag.String("chaos.faults", strings.Join(DefaultFaults, ","), "the schedule's cycle of faults")
	flagOutage   = flag.Duration("chaos.outage", CIConfig().Outage, "how long each fault lasts")
	flagGap      = flag.Duration("chaos.gap", CIConfig().Gap, "quiet time before each fault")
	flagReport   = flag.String("chaos.report", "", "write the JSON report here (and the summary next to it, .txt)")
)

// TestChaosSoak runs the soak (FLOWDROP_CHAOS=1; tools/chaos/run.sh) and
// fails on a wrong result, a lost audit line, an idempotency key run
// twice, the fleet limit exceeded, or a recovery past its bound.
func TestChaosSoak(t *testing.T) {
	if os.Getenv("FLOWDROP_CHAOS") != "1" {
		t.Skip("the chaos soak runs with FLOWDROP_CHAOS=1: tools/chaos/run.sh (.ci/run runs it)")
	}
	cfg := CIConfig()
	cfg.Duration, cfg.Workers, cfg.Pause = *flagDuration, *flagWorkers, *flagPause
	cfg.KeyedShare, cfg.LimitedShare, cfg.MCPToolShare = *flagKeyed, *flagLimited, *flagMCPTool
	cfg.Limit = limit{Rate: *flagRate, Burst: *flagBurst}
	cfg.Faults, cfg.Outage, cfg.Gap = strings.Split(*flagFaults, ","), *flagOutage, *flagGap
	bin := *flagGateway
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "flowdrop-gateway")
		began := time.Now()
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/flowdrop/gateway/cmd/flowdrop-gateway").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		t.Logf("built the gateway in %v", time.Since(began).Round(time.Second))
	}
	rep := Run(t, bin, cfg)
	sum := rep.Summary()
	t.Log("\n" + sum)
	if *flagReport != "" {
		if err := rep.WriteJSON(*flagReport); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(*flagReport, ".json")+".txt", []byte(sum), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, f := range rep.Failures {
		t.Error(f)
	}
}
