package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Call makes one request and reports its error. It must honour ctx.
type Call func(ctx context.Context) error

// ClosedConfig is a closed-loop run: Concurrency workers each send their
// next call as soon as the previous one returns, for Duration.
type ClosedConfig struct {
	Concurrency int
	Duration    time.Duration
	// CallTimeout bounds each call, so a stuck target cannot hang the run.
	CallTimeout time.Duration
}

// OpenConfig is an open-loop run: sends on a fixed timetable of Rate per
// second for Duration, whatever the target's speed, each latency measured
// from the intended send time so a slow target cannot hide its queueing
// (coordinated omission).
type OpenConfig struct {
	Rate     float64
	Duration time.Duration
	// MaxOutstanding bounds calls in flight; a send that finds them all busy
	// waits, and its wait counts in its latency.
	MaxOutstanding int
	CallTimeout    time.Duration
	// Grace is how long after Duration the run may go on catching up before
	// the rest of the timetable is dropped and in-flight calls are cancelled.
	Grace time.Duration
}

var errConfig = errors.New("loadgen: invalid config")

// RunClosed runs a closed loop until cfg.Duration has passed (calls in flight
// then finish, bounded by CallTimeout) or ctx ends.
func RunClosed(ctx context.Context, cfg ClosedConfig, call Call) (Stats, error) {
	if cfg.Concurrency < 1 || cfg.Duration <= 0 || cfg.CallTimeout <= 0 {
		return Stats{}, errConfig
	}
	var st counters
	parts := make([][]time.Duration, cfg.Concurrency)
	start := time.Now()
	end := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Go(func() {
			var lat []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				st.sent.Add(1)
				err := callWithTimeout(ctx, cfg.CallTimeout, call)
				if st.done(err) {
					lat = append(lat, time.Since(t0))
				}
			}
			parts[w] = lat
		})
	}
	wg.Wait()
	return st.stats(time.Since(start), merge(parts)), ctx.Err()
}

// RunOpen runs an open loop: floor(Rate × Duration) sends, the i-th intended
// at start + i/Rate.
func RunOpen(ctx context.Context, cfg OpenConfig, call Call) (Stats, error) {
	if cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.MaxOutstanding < 1 || cfg.CallTimeout <= 0 || cfg.Grace < 0 {
		return Stats{}, errConfig
	}
	total := int64(cfg.Rate * cfg.Duration.Seconds())
	interval := float64(time.Second) / cfg.Rate
	start := time.Now()
	// After the hard stop nothing new is sent and calls in flight are
	// cancelled, so an overloaded target cannot stretch the run unboundedly.
	hard, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration+cfg.Grace))
	defer cancel()

	var st counters
	work := make(chan time.Time) // unbuffered: a send waits for a free worker
	parts := make([][]time.Duration, cfg.MaxOutstanding)
	var wg sync.WaitGroup
	for w := range cfg.MaxOutstanding {
		wg.Go(func() {
			var lat []time.Duration
			for intended := range work {
				err := callWithTimeout(hard, cfg.CallTimeout, call)
				if st.done(err) {
					lat = append(lat, time.Since(intended))
				}
			}
			parts[w] = lat
		})
	}

	timer := time.NewTimer(0)
	<-timer.C
	var i int64
schedule:
	for ; i < total; i++ {
		intended := start.Add(time.Duration(float64(i) * interval))
		if d := time.Until(intended); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-hard.Done():
				break schedule
			}
		}
		select {
		case work <- intended:
			st.sent.Add(1)
		case <-hard.Done():
			break schedule
		}
	}
	timer.Stop()
	close(work)
	wg.Wait()
	out := st.stats(time.Since(start), merge(parts))
	out.Dropped = total - i
	return out, ctx.Err()
}

func callWithTimeout(ctx context.Context, d time.Duration, call Call) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return call(ctx)
}

type counters struct {
	sent, calls, errs atomic.Int64
	firstErr          sync.Once
	firstErrText      string
}

// done counts one completed call and reports whether it succeeded.
func (c *counters) done(err error) bool {
	c.calls.Add(1)
	if err == nil {
		return true
	}
	c.errs.Add(1)
	c.firstErr.Do(func() { c.firstErrText = err.Error() })
	return false
}

// stats is called after every worker has finished, so reading firstErrText
// is ordered after its write by the WaitGroup.
func (c *counters) stats(elapsed time.Duration, lat []time.Duration) Stats {
	return Stats{
		Sent: c.sent.Load(), Calls: c.calls.Load(), Errors: c.errs.Load(),
		Elapsed: elapsed, Latencies: lat, FirstError: c.firstErrText,
	}
}
