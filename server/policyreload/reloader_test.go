package policyreload

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowdrop/gateway/server/observe"
)

// policy is a stand-in for the gateway's PolicyConfig: the reloader only
// holds it, hashes it and hands it to apply.
type policy struct {
	Name     string
	Defaults bool // set by apply: a reload may complete its candidate
}

func hashOf(p *policy) string { return "h-" + p.Name }

// recorder records what the reloader tells its metrics, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) SetPolicy(h string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "policy "+h)
}
func (r *recorder) CountReload(res string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "reload "+res)
}
func (r *recorder) got() []string { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.events) }

func newReloader(t *testing.T, grace time.Duration) (*Reloader[policy], *recorder, *bytes.Buffer) {
	t.Helper()
	m := &recorder{}
	var log bytes.Buffer
	r := New(Config[policy]{Policy: policy{Name: "a"}, Hash: hashOf, Metrics: m,
		Log: slog.New(slog.NewJSONHandler(&log, nil)), Grace: grace})
	return r, m, &log
}

func inForce(r *Reloader[policy]) (p policy) {
	r.Do(func(c *policy) { p = *c })
	return p
}

// TestReload: a reload apply accepts puts the candidate (as apply
// completed it) in force, names it on the metrics and counts it; one
// apply refuses leaves the policy in force serving, counted and logged
// at ERROR with the error and the hash in force; a refusal before apply
// (Refuse) is the same.
func TestReload(t *testing.T) {
	t.Parallel()
	refused := errors.New("policy reload: audit cannot change without a restart")
	cases := []struct {
		name, reason string
		reload       func(r *Reloader[policy]) error
		wantErr      error
		wantInForce  policy
		wantEvents   []string // after New's "policy h-a"
		wantLevel    string
	}{
		{name: "applied", reason: "the candidate, as apply completed it, is in force and named",
			reload: func(r *Reloader[policy]) error {
				return r.Reload(policy{Name: "b"}, func(cur, next *policy) (Applied, error) {
					if cur.Name != "a" {
						t.Errorf("apply saw %q in force, want a", cur.Name)
					}
					next.Defaults = true
					return Applied{LogAttrs: []any{"auth_off", false}}, nil
				})
			},
			wantInForce: policy{Name: "b", Defaults: true}, wantEvents: []string{"policy h-b", "reload " + observe.ReloadOK}, wantLevel: "INFO"},
		{name: "refused by apply", reason: "a refused candidate changes nothing; counted and logged",
			reload: func(r *Reloader[policy]) error {
				return r.Reload(policy{Name: "b"}, func(_, next *policy) (Applied, error) {
					next.Defaults = true
					return Applied{Retire: func() { t.Error("a refused reload retired something") }}, refused
				})
			},
			wantErr: refused, wantInForce: policy{Name: "a"}, wantEvents: []string{"reload " + observe.ReloadError}, wantLevel: "ERROR"},
		{name: "refused before apply", reason: "a file that does not parse is refused the same way",
			reload:  func(r *Reloader[policy]) error { return r.Refuse(refused) },
			wantErr: refused, wantInForce: policy{Name: "a"}, wantEvents: []string{"reload " + observe.ReloadError}, wantLevel: "ERROR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, m, log := newReloader(t, time.Hour)
			defer r.CloseRetired()
			if err := tc.reload(r); !errors.Is(err, tc.wantErr) {
				t.Fatalf("reload: %v, want %v (%s)", err, tc.wantErr, tc.reason)
			}
			if got := inForce(r); got != tc.wantInForce {
				t.Errorf("in force %+v, want %+v (%s)", got, tc.wantInForce, tc.reason)
			}
			if got := r.Hash(); got != hashOf(&tc.wantInForce) {
				t.Errorf("hash %q, want %q (%s)", got, hashOf(&tc.wantInForce), tc.reason)
			}
			if got, want := m.got(), append([]string{"policy h-a"}, tc.wantEvents...); !slices.Equal(got, want) {
				t.Errorf("metrics %v, want %v (%s)", got, want, tc.reason)
			}
			var line map[string]any
			if err := json.Unmarshal(log.Bytes(), &line); err != nil {
				t.Fatalf("one log line: %v: %s", err, log.String())
			}
			if line["level"] != tc.wantLevel || line["sha256"] != hashOf(&tc.wantInForce) {
				t.Errorf("log line %s: want level %s naming %s in force (%s)", strings.TrimSpace(log.String()), tc.wantLevel, hashOf(&tc.wantInForce), tc.reason)
			}
			if tc.wantErr != nil && line["error"] != tc.wantErr.Error() {
				t.Errorf("log line %s does not say why (%s)", strings.TrimSpace(log.String()), tc.reason)
			}
		})
	}
}

// TestReloadsOneAtATime: concurrent reloads (and Do) never overlap, and
// the last one applied is the one in force with its hash.
func TestReloadsOneAtATime(t *testing.T) {
	t.Parallel()
	r, _, _ := newReloader(t, time.Hour)
	defer r.CloseRetired()
	var inside, overlaps atomic.Int32
	var last atomic.Value
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			_ = r.Reload(policy{Name: string(rune('b' + i))}, func(_, next *policy) (Applied, error) {
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				time.Sleep(time.Millisecond)
				last.Store(next.Name)
				inside.Add(-1)
				return Applied{}, nil
			})
		})
		wg.Go(func() {
			r.Do(func(*policy) {
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
			})
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping reloads", n)
	}
	if got := inForce(r).Name; got != last.Load() || r.Hash() != "h-"+got {
		t.Errorf("in force %q hash %q, want the last applied %q", got, r.Hash(), last.Load())
	}
}

// TestRetire: what a reload replaced is released once, after the grace —
// or at once by CloseRetired (shutdown), never twice.
func TestRetire(t *testing.T) {
	t.Parallel()
	const grace = 50 * time.Millisecond
	t.Run("after the grace", func(t *testing.T) {
		t.Parallel()
		r, _, _ := newReloader(t, grace)
		var closed atomic.Int32
		done := make(chan time.Time, 1)
		start := time.Now()
		if err := r.Reload(policy{Name: "b"}, func(_, _ *policy) (Applied, error) {
			return Applied{Retire: func() { closed.Add(1); done <- time.Now() }}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if closed.Load() != 0 {
			t.Fatal("released before the grace")
		}
		select {
		case at := <-done:
			if at.Sub(start) < grace {
				t.Errorf("released after %v, before the grace %v", at.Sub(start), grace)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("never released")
		}
		r.CloseRetired()
		if n := closed.Load(); n != 1 {
			t.Errorf("released %d times, want once", n)
		}
	})
	t.Run("at shutdown", func(t *testing.T) {
		t.Parallel()
		r, _, _ := newReloader(t, time.Hour)
		var closed atomic.Int32
		for _, name := range []string{"b", "c"} {
			if err := r.Reload(policy{Name: name}, func(_, _ *policy) (Applied, error) {
				return Applied{Retire: func() { closed.Add(1) }}, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		r.CloseRetired()
		r.CloseRetired()
		if n := closed.Load(); n != 2 {
			t.Errorf("released %d, want both retired objects once each", n)
		}
	})
}
