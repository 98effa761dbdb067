package policyreload

import (
	"log/slog"
	"sync"
	"time"

	"github.com/flowdrop/gateway/server/observe"
)

// DefaultRetireGrace is how long a replaced object (Applied.Retire) lives
// on: a call that took the old policy just before a reload may still be
// using it.
const DefaultRetireGrace = 30 * time.Second

// Metrics is where reloads are counted and the policy in force is named
// (observe.PolicyMetrics).
type Metrics interface {
	SetPolicy(sha256 string)
	CountReload(result string) // observe.ReloadOK or observe.ReloadError
}

// Config is what a Reloader starts with. Hash is required.
type Config[P any] struct {
	Policy P               // the policy in force at start
	Hash   func(*P) string // a policy's identity (equal policies hash equal)
	// Metrics (nil: none) counts reloads and names the policy in force.
	Metrics Metrics
	Log     *slog.Logger  // nil: slog.Default()
	Grace   time.Duration // how long a retired object lives (0: DefaultRetireGrace)
}

// Applied is what a successful apply reports.
type Applied struct {
	// Retire, when set, releases what the reload replaced; it runs after
	// the grace, or at CloseRetired.
	Retire func()
	// LogAttrs are added to the "policy reloaded" line.
	LogAttrs []any
}

// Reloader holds the policy in force, its hash, and the objects reloads
// retired; its lock makes reloads one at a time and guards what Do runs.
type Reloader[P any] struct {
	hashOf  func(*P) string
	metrics Metrics
	log     *slog.Logger
	grace   time.Duration

	mu      sync.Mutex
	cfg     P
	hash    string
	swapped time.Time     // when a reload swapped the policy in force in (zero: at start)
	retired []*time.Timer // each runs its Retire; stopped at CloseRetired
	retire  []func()      // by index of retired
	history []Event       // history.go
}

// New is a reloader with cfg.Policy in force (named on cfg.Metrics).
func New[P any](cfg Config[P]) *Reloader[P] {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultRetireGrace
	}
	r := &Reloader[P]{hashOf: cfg.Hash, metrics: cfg.Metrics, log: cfg.Log, grace: cfg.Grace, cfg: cfg.Policy}
	r.hash = r.hashOf(&r.cfg)
	if r.metrics != nil {
		r.metrics.SetPolicy(r.hash)
	}
	return r
}

// Reload makes next the policy in force if apply, given the policy in
// force and next (which it may complete), checks, builds and swaps it in
// without error; otherwise the reload is refused (Refuse) and the policy
// in force keeps serving. Reloads run one at a time.
func (r *Reloader[P]) Reload(next P, apply func(cur, next *P) (Applied, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := apply(&r.cfg, &next)
	if err != nil {
		return r.refuseLocked(err)
	}
	if a.Retire != nil {
		r.retire = append(r.retire, a.Retire)
		r.retired = append(r.retired, time.AfterFunc(r.grace, a.Retire))
	}
	prev := r.hash
	r.cfg, r.hash, r.swapped = next, r.hashOf(&next), time.Now()
	r.recordLocked(Event{Time: r.swapped, OK: true, Hash: r.hash, Previous: prev})
	if r.metrics != nil {
		r.metrics.SetPolicy(r.hash)
		r.metrics.CountReload(observe.ReloadOK)
	}
	r.log.Info("policy reloaded", append([]any{"sha256", r.hash, "previous_sha256", prev}, a.LogAttrs...)...)
	return nil
}

// Refuse logs and counts a reload refused before it reached Reload (a
// file that does not parse), and returns err.
func (r *Reloader[P]) Refuse(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refuseLocked(err)
}

func (r *Reloader[P]) refuseLocked(err error) error {
	r.recordLocked(Event{Time: time.Now(), Hash: r.hash})
	if r.metrics != nil {
		r.metrics.CountReload(observe.ReloadError)
	}
	// The operator's log: the error may name files (never a secret: a
	// policy holds only key hashes).
	r.log.Error("policy reload refused; the policy in force keeps serving", "error", err.Error(), "sha256", r.hash)
	return err
}

// Hash is the hash of the policy in force.
func (r *Reloader[P]) Hash() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hash
}

// InForce is the hash of the policy in force and when a reload swapped it
// in (zero: it is the policy the gateway started with). Unlike History's
// newest OK event, it outlives any number of refused reloads.
func (r *Reloader[P]) InForce() (hash string, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hash, r.swapped
}

// Do runs f with the policy in force, no reload running meanwhile; f must
// not keep the pointer.
func (r *Reloader[P]) Do(f func(inForce *P)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.cfg)
}

// CloseRetired releases at once what reloads retired and their timers
// have not released yet (at shutdown), each once.
func (r *Reloader[P]) CloseRetired() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range r.retired {
		if t.Stop() {
			r.retire[i]()
		}
	}
	r.retired, r.retire = nil, nil
}
