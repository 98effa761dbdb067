package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/backend"
)

// toolGauge is the value of name's series labelled tool on /metrics; -1 if
// absent.
func toolGauge(t *testing.T, adminURL, name, tool string) float64 {
	t.Helper()
	f := scrape(t, adminURL)[name]
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "tool" && l.GetValue() == tool {
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// TestBackendOutlierEjection (issue 35 item 2): three real ToolBackendService
// replicas over loopback behind one static:/// target. One starts failing
// Unavailable: after the threshold it is ejected (metrics, a WARN line with
// its address) and gets no calls while ejected; a second failing one is not
// ejected too (the 50 % cap: one of three); the first recovers and is
// readmitted after the ejection (an INFO line) and gets calls again.
func TestBackendOutlierEjection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const tool = "ej.echo"
	a, b, c := serveToolReplica(t, tool), serveToolReplica(t, tool), serveToolReplica(t, tool)
	target := "static:///" + a.addr + "," + b.addr + "," + c.addr
	var logs syncBuffer
	// Long enough that the calls below all fall within the ejection even on
	// a loaded machine (the test checks it still holds after them).
	const base = 10 * time.Second
	env := gatewaytest.Start(t, gatewaytest.WithAdmin(), gatewaytest.WithLogOutput(&logs),
		gatewaytest.WithTool(plainTool(tool, target, false)),
		gatewaytest.WithConfig(func(cfg *server.Config) {
			cfg.BackendEjection = backend.EjectionConfig{Threshold: 3, Base: base, Max: 2 * base, MaxPercent: 50}
		}))
	calls := func(n int) (failed int) {
		for range n {
			if _, err := invoke(ctx, env, tool); err != nil {
				failed++
			}
		}
		return failed
	}
	// Every replica connected and serving.
	for i := 0; a.count(tool) == 0 || b.count(tool) == 0 || c.count(tool) == 0; i++ {
		if i == 300 {
			t.Fatalf("replicas served %d, %d, %d calls; want all three reached", a.count(tool), b.count(tool), c.count(tool))
		}
		calls(1)
	}
	if v := toolGauge(t, env.AdminURL, "flowdrop_backend_ejected_addresses", tool); v != 0 {
		t.Fatalf("ejected addresses with every replica healthy = %v, want 0", v)
	}

	a.down.Store(true)
	calls(30) // a gets about 10 of them: Unavailable from the 1st, ejected after the 3rd
	if v := toolGauge(t, env.AdminURL, "flowdrop_backend_ejected_addresses", tool); v != 1 {
		t.Fatalf("ejected addresses after a failed every call = %v, want 1", v)
	}
	if v := toolGauge(t, env.AdminURL, "flowdrop_backend_ejections_total", tool); v != 1 {
		t.Errorf("ejections after a failed = %v, want 1", v)
	}
	if l := logs.String(); !strings.Contains(l, "backend address ejected") || !strings.Contains(l, a.addr) {
		t.Errorf("no WARN line naming the ejected address %s:\n%s", a.addr, l)
	}

	// While ejected: no call reaches a, and none fails.
	before := a.count(tool)
	if failed := calls(40); failed != 0 {
		t.Errorf("%d of 40 calls failed with the failing replica ejected, want 0", failed)
	}
	if got := a.count(tool); got != before {
		t.Errorf("the ejected replica received %d calls during its ejection, want 0", got-before)
	}

	// The cap: c failing too is not ejected (one of three is the most),
	// so it keeps its share.
	c.down.Store(true)
	beforeC := c.count(tool)
	failed := calls(30)
	c.down.Store(false)
	if got := c.count(tool) - beforeC; got < 10 || failed != got {
		t.Errorf("second failing replica got %d of 30 calls (%d failed) with one replica ejected; want it kept in (about half, all failing): the cap is 1 of 3", got, failed)
	}
	if v := toolGauge(t, env.AdminURL, "flowdrop_backend_ejected_addresses", tool); v != 1 {
		t.Fatalf("ejected addresses with two failing = %v, want 1 (the cap)", v)
	}
	if got := a.count(tool); got != before {
		t.Fatalf("the ejection ended during the test's calls (a got %d calls): the checks above are void; raise base", got-before)
	}

	// a recovers: readmitted when its ejection ends, then served again.
	a.down.Store(false)
	if err := poll(3*base, func() error {
		if v := toolGauge(t, env.AdminURL, "flowdrop_backend_ejected_addresses", tool); v != 0 {
			return fmt.Errorf("ejected addresses = %v after the ejection, want 0", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if failed := calls(30); failed != 0 {
		t.Errorf("%d of 30 calls failed after every replica recovered, want 0", failed)
	}
	if got := a.count(tool); got <= before {
		t.Errorf("the readmitted replica received no calls after its ejection ended")
	}
	if !strings.Contains(logs.String(), "backend address readmitted") {
		t.Errorf("no INFO line for the readmission:\n%s", logs.String())
	}
	if v := toolGauge(t, env.AdminURL, "flowdrop_backend_ejections_total", tool); v != 1 {
		t.Errorf("ejections at the end = %v, want 1 (the capped replica never ejected)", v)
	}
}
