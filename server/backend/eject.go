package backend

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/roundrobin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"
)

// Outlier ejection for balanced backends (a target with several
// addresses, balance.go). round_robin alone skips a replica only while its
// connection is down; one that accepts connections and answers every call
// Unavailable kept getting its share. Here an address whose calls failed
// Unavailable Threshold times in a row is ejected — picks pass it over —
// for Base × (its recent ejections), at most Max, then readmitted. At most
// MaxPercent of the addresses (and never all) are ejected at once.
//
// Hand-written: gRPC's own outlier detection (gRFC A50) is internal to its
// xDS packages and counts every error, a caller's InvalidArgument too.

// Ejection defaults.
const (
	DefaultEjectThreshold  = 5
	DefaultEjectBase       = 10 * time.Second
	DefaultEjectMax        = 2 * time.Minute
	DefaultEjectMaxPercent = 50
)

// EjectionConfig configures outlier ejection; Threshold 0 turns it off.
type EjectionConfig struct {
	// Threshold is how many calls in a row must fail Unavailable to eject an
	// address.
	Threshold int
	// Base is the first ejection's length; the nth in a row lasts n × Base,
	// at most Max. Each Base spent readmitted forgives one ejection.
	Base, Max time.Duration
	// MaxPercent bounds the share of a target's addresses ejected at once
	// (rounded down; never all of them).
	MaxPercent int
}

// DefaultEjectionConfig is ejection on, with the defaults above.
func DefaultEjectionConfig() EjectionConfig {
	return EjectionConfig{Threshold: DefaultEjectThreshold, Base: DefaultEjectBase, Max: DefaultEjectMax, MaxPercent: DefaultEjectMaxPercent}
}

// Validate names every bad setting.
func (c EjectionConfig) Validate() error {
	switch {
	case c.Threshold < 0:
		return fmt.Errorf("backend ejection threshold must not be negative, got %d", c.Threshold)
	case c.Threshold == 0:
		return nil
	case c.Base <= 0 || c.Max < c.Base:
		return fmt.Errorf("backend ejection times must be positive with the cap at least the base, got %v and %v", c.Base, c.Max)
	case c.MaxPercent < 1 || c.MaxPercent > 100:
		return fmt.Errorf("backend ejection max percent must be in 1..100, got %d", c.MaxPercent)
	}
	return nil
}

// ejectingRoundRobin is the balancer's registered name. gRPC looks
// balancers up by name in one process-wide table, so this is registered
// once in init; each connection finds its own settings and counters
// through the id in its service config (outlierSets).
const ejectingRoundRobin = "flowdrop_round_robin_ejecting"

func init() { balancer.Register(ejectBuilder{}) }

// outlierSets maps a service config's id to its connection's outliers.
var (
	outlierSets sync.Map // uint64 → *outliers
	outlierIDs  atomic.Uint64
)

// outliers is one balanced connection's ejection state.
type outliers struct {
	id     uint64
	cfg    EjectionConfig
	log    *slog.Logger
	target string

	ejections atomic.Uint64 // all ejections so far
	ejectedN  atomic.Int64  // addresses ejected now

	mu     sync.Mutex
	addrs  map[string]*addrHealth
	total  int // addresses the resolver gives
	closed bool
}

// addrHealth is one address's record. ejected and failures are read on
// every pick and call; the rest only under outliers.mu.
type addrHealth struct {
	o        *outliers
	addr     string
	ejected  atomic.Bool
	failures atomic.Int32
	// done is the pick's Done, built once so a call allocates nothing.
	done func(balancer.DoneInfo)

	inARow     int // ejections not yet forgiven
	readmitted time.Time
	timer      *time.Timer
}

func newOutliers(cfg EjectionConfig, log *slog.Logger, target string) *outliers {
	o := &outliers{id: outlierIDs.Add(1), cfg: cfg, log: log, target: target, addrs: map[string]*addrHealth{}}
	outlierSets.Store(o.id, o)
	return o
}

// serviceConfig selects the ejecting balancer with o's id.
func (o *outliers) serviceConfig() string {
	return fmt.Sprintf(`{"loadBalancingConfig":[{%q:{"id":%d}}]}`, ejectingRoundRobin, o.id)
}

// close forgets o and stops its readmission timers.
func (o *outliers) close() {
	outlierSets.Delete(o.id)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for _, h := range o.addrs {
		if h.timer != nil {
			h.timer.Stop()
		}
	}
}

// Stats returns all ejections so far and the addresses ejected now.
func (o *outliers) stats() (ejections uint64, ejected int) {
	return o.ejections.Load(), int(o.ejectedN.Load())
}

// health returns addr's record, creating it.
func (o *outliers) health(addr string) *addrHealth {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.addrs[addr]
	if h == nil {
		h = &addrHealth{o: o, addr: addr}
		h.done = h.record
		o.addrs[addr] = h
	}
	return h
}

// setAddresses records the resolver's current address list; records of
// addresses that left it are dropped (an ejected one readmitted).
func (o *outliers) setAddresses(addrs []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total = len(addrs)
	keep := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		keep[a] = true
	}
	for a, h := range o.addrs {
		if keep[a] {
			continue
		}
		if h.timer != nil {
			h.timer.Stop()
		}
		if h.ejected.Swap(false) {
			o.ejectedN.Add(-1)
		}
		delete(o.addrs, a)
	}
}

// record is a call's outcome on h: Unavailable counts toward ejection,
// anything else (the backend answered) clears the count.
func (h *addrHealth) record(di balancer.DoneInfo) {
	if di.Err == nil || status.Code(di.Err) != codes.Unavailable {
		if h.failures.Load() != 0 {
			h.failures.Store(0)
		}
		return
	}
	if n := h.failures.Add(1); int(n) >= h.o.cfg.Threshold && !h.ejected.Load() {
		h.o.eject(h, int(n))
	}
}

// eject ejects h unless that would pass the cap.
func (o *outliers) eject(h *addrHealth, failures int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || h.ejected.Load() || o.addrs[h.addr] != h {
		return
	}
	if limit := min(o.total*o.cfg.MaxPercent/100, o.total-1); int(o.ejectedN.Load()) >= limit {
		// At the cap the address keeps its share; its count stays, so it is
		// ejected on its next failure once another is readmitted.
		return
	}
	if !h.readmitted.IsZero() {
		h.inARow = max(0, h.inARow-int(time.Since(h.readmitted)/o.cfg.Base))
	}
	h.inARow++
	d := min(o.cfg.Base*time.Duration(h.inARow), o.cfg.Max)
	h.ejected.Store(true)
	h.failures.Store(0)
	o.ejectedN.Add(1)
	o.ejections.Add(1)
	h.timer = time.AfterFunc(d, func() { o.readmit(h) })
	o.log.Warn("backend address ejected: its calls failed Unavailable in a row",
		"target", o.target, "address", h.addr, "failures", failures, "for", d, "ejections_in_a_row", h.inARow)
}

func (o *outliers) readmit(h *addrHealth) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || !h.ejected.Swap(false) {
		return
	}
	o.ejectedN.Add(-1)
	h.readmitted = time.Now()
	o.log.Info("backend address readmitted after its ejection", "target", o.target, "address", h.addr)
}

// ejectBuilder builds the ejecting balancer: gRPC's round_robin, its
// picks passed over ejected addresses, its calls' outcomes recorded.
type ejectBuilder struct{}

type ejectConfig struct {
	serviceconfig.LoadBalancingConfig
	ID uint64 `json:"id"`
}

func (ejectBuilder) Name() string { return ejectingRoundRobin }

func (ejectBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var c ejectConfig
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", ejectingRoundRobin, err)
	}
	return &c, nil
}

func (ejectBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	b := &ejectBalancer{cc: cc, subConns: map[balancer.SubConn]string{}}
	b.child = balancer.Get(roundrobin.Name).Build(&ejectCC{ClientConn: cc, b: b}, opts)
	return b
}

type ejectBalancer struct {
	cc    balancer.ClientConn
	child balancer.Balancer

	mu       sync.Mutex
	o        *outliers // nil: no settings found; picks pass through
	subConns map[balancer.SubConn]string
}

func (b *ejectBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	var o *outliers
	if c, ok := s.BalancerConfig.(*ejectConfig); ok {
		if v, ok := outlierSets.Load(c.ID); ok {
			o = v.(*outliers)
		}
	}
	var addrs []string
	for _, e := range s.ResolverState.Endpoints {
		for _, a := range e.Addresses {
			addrs = append(addrs, a.Addr)
		}
	}
	if len(s.ResolverState.Endpoints) == 0 {
		for _, a := range s.ResolverState.Addresses {
			addrs = append(addrs, a.Addr)
		}
	}
	if o != nil {
		o.setAddresses(addrs)
	}
	b.mu.Lock()
	b.o = o
	// SubConns of addresses that left the list are shut down by
	// round_robin; forget them.
	for sc, a := range b.subConns {
		if !slices.Contains(addrs, a) {
			delete(b.subConns, sc)
		}
	}
	b.mu.Unlock()
	s.BalancerConfig = nil
	return b.child.UpdateClientConnState(s)
}

func (b *ejectBalancer) ResolverError(err error) { b.child.ResolverError(err) }

// UpdateSubConnState is not called: round_robin's SubConns report through
// their StateListener.
func (b *ejectBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (b *ejectBalancer) Close()    { b.child.Close() }
func (b *ejectBalancer) ExitIdle() { b.child.ExitIdle() }

// ejectCC is the ClientConn round_robin sees: it learns each SubConn's
// address and wraps each picker.
type ejectCC struct {
	balancer.ClientConn
	b *ejectBalancer
}

func (c *ejectCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	//lint:ignore SA1019 round_robin creates its SubConns through this; wrapping it is how a parent learns their addresses.
	sc, err := c.ClientConn.NewSubConn(addrs, opts)
	if err == nil && len(addrs) > 0 {
		c.b.mu.Lock()
		c.b.subConns[sc] = addrs[0].Addr
		c.b.mu.Unlock()
	}
	return sc, err
}

func (c *ejectCC) UpdateState(s balancer.State) {
	c.b.mu.Lock()
	if o := c.b.o; o != nil && s.Picker != nil {
		p := &ejectPicker{child: s.Picker, health: make(map[balancer.SubConn]*addrHealth, len(c.b.subConns))}
		for sc, addr := range c.b.subConns {
			p.health[sc] = o.health(addr)
		}
		s.Picker = p
	}
	c.b.mu.Unlock()
	c.ClientConn.UpdateState(s)
}

// ejectPicker asks round_robin again while it picks an ejected address.
// The cap keeps some addresses admitted; if every ready one is ejected
// (the others down) the call goes to the last pick rather than failing.
type ejectPicker struct {
	child  balancer.Picker
	health map[balancer.SubConn]*addrHealth
}

func (p *ejectPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	var r balancer.PickResult
	var h *addrHealth
	for range len(p.health) + 1 {
		var err error
		if r, err = p.child.Pick(info); err != nil {
			return r, err
		}
		if h = p.health[r.SubConn]; h == nil || !h.ejected.Load() {
			break
		}
	}
	if h == nil {
		return r, nil
	}
	if r.Done == nil {
		r.Done = h.done
	} else {
		inner := r.Done
		r.Done = func(di balancer.DoneInfo) { h.record(di); inner(di) }
	}
	return r, nil
}
