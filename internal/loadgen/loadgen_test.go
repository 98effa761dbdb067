package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
		reason string
	}{
		{"empty", nil, 50, 0, "no samples must not panic or invent a value"},
		{"single p50", ms(7), 50, 7 * time.Millisecond, "one sample is every percentile"},
		{"single p99", ms(7), 99, 7 * time.Millisecond, "one sample is every percentile"},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond, "nearest rank: ceil(0.5*100)=50th sample"},
		{"p90 of 1..100", hundred, 90, 90 * time.Millisecond, "nearest rank: 90th sample"},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond, "nearest rank: 99th sample, not the max"},
		{"p100 of 1..100", hundred, 100, 100 * time.Millisecond, "p100 is the max"},
		{"p50 of 4", ms(1, 2, 3, 4), 50, 2 * time.Millisecond, "ceil(0.5*4)=2: lower median, no interpolation"},
		{"p99 of 4", ms(1, 2, 3, 4), 99, 4 * time.Millisecond, "ceil(0.99*4)=4: a small run's p99 is its max"},
		{"p50 of 5", ms(1, 2, 3, 4, 50), 50, 3 * time.Millisecond, "an outlier does not move the median"},
		{"tiny p", ms(1, 2, 3), 0.0001, 1 * time.Millisecond, "rank is clamped to at least the first sample"},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(p=%v) = %v, want %v (%s)", tc.name, tc.p, got, tc.want, tc.reason)
		}
	}
}

func TestFill(t *testing.T) {
	st := Stats{Sent: 12, Calls: 12, Errors: 2, Elapsed: 2 * time.Second, Latencies: ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)}
	var r Result
	st.Fill(&r)
	if r.ThroughputPerS != 5 {
		t.Errorf("throughput = %v, want 5: only the 10 successful calls over 2 s count", r.ThroughputPerS)
	}
	if r.P50us != 5000 || r.P90us != 9000 || r.P99us != 10000 || r.MaxUs != 10000 {
		t.Errorf("percentiles µs = %v/%v/%v/%v, want 5000/9000/10000/10000", r.P50us, r.P90us, r.P99us, r.MaxUs)
	}
}

func TestOpenLoopSendCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rate   float64
		dur    time.Duration
		want   int64
		reason string
	}{
		{"1000/s for 200ms", 1000, 200 * time.Millisecond, 200, "rate×duration sends, no more, no fewer"},
		{"250/s for 100ms", 250, 100 * time.Millisecond, 25, "a slow rate keeps its timetable"},
		{"3000/s for 100ms", 3000, 100 * time.Millisecond, 300, "sub-millisecond intervals are not rounded away"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			st, err := RunOpen(context.Background(), OpenConfig{
				Rate: tc.rate, Duration: tc.dur, MaxOutstanding: 8, CallTimeout: time.Second, Grace: 5 * time.Second,
			}, func(context.Context) error { n.Add(1); return nil })
			if err != nil {
				t.Fatal(err)
			}
			// Generous grace makes the count exact: the timetable is
			// deterministic, so only a scheduler bug changes it.
			if got := n.Load(); got != tc.want || st.Sent != tc.want || st.Calls != tc.want || st.Dropped != 0 {
				t.Errorf("calls made %d, sent %d, completed %d, dropped %d; want %d,%d,%d,0 (%s)",
					got, st.Sent, st.Calls, st.Dropped, tc.want, tc.want, tc.want, tc.reason)
			}
			if int64(len(st.Latencies)) != tc.want {
				t.Errorf("%d latencies recorded, want %d", len(st.Latencies), tc.want)
			}
		})
	}
}

// With one outstanding call and calls slower than the interval, each send
// is late by more than the last; latency measured from the intended time
// must include that queueing (no coordinated omission).
func TestOpenLoopCountsQueueing(t *testing.T) {
	const sends = 20
	st, err := RunOpen(context.Background(), OpenConfig{
		Rate: 1000, Duration: sends * time.Millisecond, MaxOutstanding: 1, CallTimeout: time.Second, Grace: 5 * time.Second,
	}, func(context.Context) error { time.Sleep(2 * time.Millisecond); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Calls != sends {
		t.Fatalf("completed %d calls, want %d", st.Calls, sends)
	}
	// The last send is intended at 19 ms but cannot start before 19 calls of
	// ≥2 ms have finished (≥38 ms), then takes ≥2 ms: ≥21 ms from intended.
	// Service time alone would say ~2 ms. Lower bounds only: no speed claim.
	if maxLat := st.Latencies[len(st.Latencies)-1]; maxLat < 21*time.Millisecond {
		t.Errorf("max latency %v, want ≥ 21ms: waiting for a free slot must count", maxLat)
	}
}

func TestOpenLoopHardStop(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	st, err := RunOpen(context.Background(), OpenConfig{
		Rate: 1000, Duration: 50 * time.Millisecond, MaxOutstanding: 2, CallTimeout: time.Minute, Grace: 50 * time.Millisecond,
	}, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Two calls hang until the hard stop cancels them; the other 48 of the
	// 50 scheduled sends never find a free slot.
	if st.Sent != 2 || st.Errors != 2 || st.Dropped != 48 || len(st.Latencies) != 0 {
		t.Errorf("sent %d, errors %d, dropped %d, ok %d; want 2, 2, 48, 0: a stuck target must end the run at the hard stop",
			st.Sent, st.Errors, st.Dropped, len(st.Latencies))
	}
	if st.FirstError == "" {
		t.Error("FirstError empty, want the cancellation's text")
	}
}

func TestClosedLoopConcurrencyAndCounts(t *testing.T) {
	const conc = 4
	var inFlight, peak, made atomic.Int64
	var mu sync.Mutex
	boom := errors.New("boom")
	st, err := RunClosed(context.Background(), ClosedConfig{Concurrency: conc, Duration: 50 * time.Millisecond, CallTimeout: time.Second},
		func(context.Context) error {
			n := inFlight.Add(1)
			mu.Lock()
			peak.Store(max(peak.Load(), n))
			mu.Unlock()
			time.Sleep(time.Millisecond)
			inFlight.Add(-1)
			if made.Add(1)%3 == 0 {
				return boom
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() > conc {
		t.Errorf("peak in flight %d, want ≤ %d", peak.Load(), conc)
	}
	if st.Calls != made.Load() || st.Sent != st.Calls {
		t.Errorf("sent %d completed %d, calls made %d: every call must be counted once", st.Sent, st.Calls, made.Load())
	}
	if st.Errors != made.Load()/3 || int64(len(st.Latencies)) != st.Calls-st.Errors {
		t.Errorf("errors %d (want %d), latencies %d (want %d)", st.Errors, made.Load()/3, len(st.Latencies), st.Calls-st.Errors)
	}
	if st.FirstError != "boom" {
		t.Errorf("FirstError %q, want boom", st.FirstError)
	}
}

func TestConfigRejected(t *testing.T) {
	nop := func(context.Context) error { return nil }
	if _, err := RunClosed(context.Background(), ClosedConfig{Concurrency: 0, Duration: time.Second, CallTimeout: time.Second}, nop); err == nil {
		t.Error("RunClosed with concurrency 0: want error")
	}
	if _, err := RunOpen(context.Background(), OpenConfig{Rate: 0, Duration: time.Second, MaxOutstanding: 1, CallTimeout: time.Second}, nop); err == nil {
		t.Error("RunOpen with rate 0: want error")
	}
}

func TestPayloads(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		reason string
	}{
		{PayloadClean, "the headline payload: ~1 KiB, 10 parameters"},
		{PayloadRepair, "same shape, two repairs needed"},
	} {
		b, err := RequestBytes(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 970 || len(b) > 1100 {
			t.Errorf("%s: %d bytes, want about 1 KiB (%s)", tc.kind, len(b), tc.reason)
		}
		var req gatewayv1.InvokeToolRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		if n := len(req.GetArguments().GetFields()); n != 10 {
			t.Errorf("%s: %d parameters, want 10", tc.kind, n)
		}
		props := BenchToolSchema()["properties"].(map[string]any)
		for k := range req.GetArguments().GetFields() {
			if _, ok := props[k]; !ok {
				t.Errorf("%s: parameter %q is not declared in BenchToolSchema", tc.kind, k)
			}
		}
		// The same bytes must be a valid InvokeRequest for the direct target.
		var be gatewayv1.InvokeRequest
		if err := proto.Unmarshal(b, &be); err != nil || be.GetTool() != BenchTool || !proto.Equal(be.GetArguments(), req.GetArguments()) {
			t.Errorf("%s: bytes do not read back as the same InvokeRequest (err %v)", tc.kind, err)
		}
	}
	clean, _ := Arguments(PayloadClean)
	repair, _ := Arguments(PayloadRepair)
	if clean.Fields["labels"].GetListValue() == nil || repair.Fields["labels"].GetStringValue() == "" {
		t.Error("labels must be a list in clean and a JSON string in repair")
	}
	if _, err := Arguments("bogus"); err == nil {
		t.Error("unknown payload kind: want error")
	}
}
