package backend

import (
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type fakeSubConn struct {
	balancer.SubConn
	name string
}

// fixedPicker picks its SubConns in turn, as round_robin does.
type fixedPicker struct {
	scs []balancer.SubConn
	n   int
}

func (p *fixedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	p.n++
	return balancer.PickResult{SubConn: p.scs[p.n%len(p.scs)]}, nil
}

// newTestOutliers is n addresses a0…an-1 and a picker over them.
func newTestOutliers(t *testing.T, cfg EjectionConfig, n int) (*outliers, *ejectPicker, []string) {
	t.Helper()
	o := newOutliers(cfg, slog.New(slog.DiscardHandler), "static:///test")
	t.Cleanup(o.close)
	var addrs []string
	p := &ejectPicker{child: &fixedPicker{}, health: map[balancer.SubConn]*addrHealth{}}
	for i := range n {
		a := string(rune('a'+i)) + "0"
		addrs = append(addrs, a)
		sc := &fakeSubConn{name: a}
		p.child.(*fixedPicker).scs = append(p.child.(*fixedPicker).scs, sc)
		p.health[sc] = o.health(a)
	}
	o.setAddresses(addrs)
	return o, p, addrs
}

var errUnavailable = status.Error(codes.Unavailable, "down")

// TestEjectionCap: how many of a target's addresses may be ejected at
// once, when every one of them fails.
func TestEjectionCap(t *testing.T) {
	cases := []struct {
		reason     string
		addrs, pct int
		want       int
	}{
		{"one address is never ejected: there is nowhere else to go", 1, 100, 0},
		{"of two at 50 %, one", 2, 50, 1},
		{"of three at 50 %, one (rounded down)", 3, 50, 1},
		{"of four at 50 %, two", 4, 50, 2},
		{"at 100 %, never all", 3, 100, 2},
		{"at 10 % of five, none (rounded down)", 5, 10, 0},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := EjectionConfig{Threshold: 2, Base: time.Hour, Max: time.Hour, MaxPercent: tc.pct}
			o, p, _ := newTestOutliers(t, cfg, tc.addrs)
			for _, h := range p.health {
				for range cfg.Threshold {
					h.record(balancer.DoneInfo{Err: errUnavailable})
				}
			}
			if total, ejected := o.stats(); ejected != tc.want || total != uint64(tc.want) {
				t.Errorf("%d addresses all failing at %d %%: %d ejected (%d ejections), want %d", tc.addrs, tc.pct, ejected, total, tc.want)
			}
		})
	}
}

// TestEjectionCounts: only Unavailable in a row counts; any other answer
// clears the count.
func TestEjectionCounts(t *testing.T) {
	cases := []struct {
		reason   string
		outcomes []error
		ejected  bool
	}{
		{"three Unavailable in a row", []error{errUnavailable, errUnavailable, errUnavailable}, true},
		{"a success in between clears the count", []error{errUnavailable, errUnavailable, nil, errUnavailable}, false},
		{"an answer such as InvalidArgument means the replica is up", []error{errUnavailable, errUnavailable,
			status.Error(codes.InvalidArgument, "bad"), errUnavailable, errUnavailable}, false},
		{"DeadlineExceeded may be the caller's deadline: not counted", []error{status.Error(codes.DeadlineExceeded, "late"),
			status.Error(codes.DeadlineExceeded, "late"), status.Error(codes.DeadlineExceeded, "late")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			o, p, _ := newTestOutliers(t, EjectionConfig{Threshold: 3, Base: time.Hour, Max: time.Hour, MaxPercent: 50}, 2)
			var h *addrHealth
			for _, x := range p.health {
				h = x
				break
			}
			for _, err := range tc.outcomes {
				h.record(balancer.DoneInfo{Err: err})
			}
			if _, n := o.stats(); (n == 1) != tc.ejected || h.ejected.Load() != tc.ejected {
				t.Errorf("ejected = %v (%d ejected in all), want %v", h.ejected.Load(), n, tc.ejected)
			}
		})
	}
}

// TestEjectedAddressIsNotPicked: picks pass an ejected address over; a
// pick and its Done allocate nothing; an address failing again right after
// its readmission counts two ejections in a row (a longer one).
func TestEjectedAddressIsNotPicked(t *testing.T) {
	cfg := EjectionConfig{Threshold: 1, Base: time.Hour, Max: 2 * time.Hour, MaxPercent: 50}
	o, p, _ := newTestOutliers(t, cfg, 2)
	var bad *addrHealth
	for _, h := range p.health {
		bad = h
		break
	}
	bad.record(balancer.DoneInfo{Err: errUnavailable})
	for range 10 {
		r, err := p.Pick(balancer.PickInfo{})
		if err != nil {
			t.Fatal(err)
		}
		if p.health[r.SubConn] == bad {
			t.Fatal("picked the ejected address")
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		r, _ := p.Pick(balancer.PickInfo{})
		r.Done(balancer.DoneInfo{})
	})
	if allocs != 0 {
		t.Errorf("a pick and its Done allocate %v times, want 0", allocs)
	}
	o.readmit(bad)
	bad.record(balancer.DoneInfo{Err: errUnavailable})
	o.mu.Lock()
	inARow := bad.inARow
	o.mu.Unlock()
	if total, _ := o.stats(); total != 2 || inARow != 2 {
		t.Errorf("after a second ejection: %d ejections, %d in a row; want 2 and 2", total, inARow)
	}
}
