package registry

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Lazy compilation (WithLazyCompile). Compiling is the registry's largest
// cost at scale — about a millisecond or more a tool (BenchmarkCompile),
// minutes for 100,000 tools on two CPUs — so a start that compiles every
// stored tool before publishing keeps a gateway from serving for that long.
//
// Under WithLazyCompile a full load (Start, a re-list after a lost watch)
// publishes each tool it has not compiled before as a stub: the stored
// Tool and a compile that runs once. Lookup, Resolve and LookupIn compile
// a stub on its first use (concurrent first uses wait for that one
// compile) and return the compiled entry, so a call always runs against a
// compiled tool, exactly as an eager load would have compiled it (the
// same CompileOptions). Meanwhile a warm-up compiles every stub on all
// CPUs, so calls soon find their tools compiled, and then drops from the
// snapshot each stub that does not compile (logged, as an eager load
// skips it). A stub that does not compile is never served: Lookup reports
// it absent, as after an eager load; until the warm-up drops it, List
// still shows it. Registers and watch events compile eagerly: one tool.

// WithLazyCompile makes full loads publish uncompiled tools and compile
// them on first use and in a background warm-up (see above).
func WithLazyCompile() Option {
	return func(r *Registry) { r.lazy = true }
}

// WithoutWarmUp, with WithLazyCompile, leaves the warm-up out: a stub
// compiles on its first use only, so memory grows with the tools called
// rather than with the catalog (a compiled tool costs tens of kilobytes;
// BENCHMARKS.md, "Registry at 100,000 tools"), and a stub that does not
// compile stays listed (never served) until the next full load.
// WaitCompiled then returns at once.
func WithoutWarmUp() Option {
	return func(r *Registry) { r.noWarmUp = true }
}

// lazyEntry is a stub's compile, run once.
type lazyEntry struct {
	once    sync.Once
	compile func(Tool) *Entry // nil result: does not compile (logged)
	ok      bool
}

// compiled is e ready for a call, and false when it does not compile. A
// stub is compiled in place on its first use, so it stays the pointer the
// snapshot and List hold (caches keyed by entry, such as the audit's
// redactors, keep working). Its compiled parts are written inside the
// once and read only by those that came through here after it: List
// readers read only Tool.
func (e *Entry) compiled() (*Entry, bool) {
	if e == nil {
		return nil, false
	}
	l := e.lazy
	if l == nil {
		return e, true
	}
	l.once.Do(func() {
		if c := l.compile(e.Tool); c != nil {
			// Every compiled part of Entry (TestLazyCompileMatchesEager
			// checks none is missed).
			e.Plan, e.Schema, e.Method, e.Output = c.Plan, c.Schema, c.Method, c.Output
			l.ok = true
		}
		l.compile = nil
	})
	if !l.ok {
		return nil, false
	}
	return e, true
}

// stub is an uncompiled entry for t.
func (r *Registry) stub(t Tool) *Entry {
	return &Entry{Tool: t, lazy: &lazyEntry{compile: r.compileLogged}}
}

// warm compiles stubs on all CPUs until done or ctx ends, then drops from
// the snapshot those that did not compile.
func (r *Registry) warm(ctx context.Context, stubs []*Entry, prev <-chan struct{}, done chan<- struct{}) {
	defer r.warming.Done()
	defer close(done)
	if prev != nil {
		// One warm-up at a time: the CPUs are shared with serving.
		select {
		case <-prev:
		case <-ctx.Done():
			return
		}
	}
	var (
		next   atomic.Int64
		mu     sync.Mutex
		failed []*Entry
		wg     sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(stubs) {
					return
				}
				if _, ok := stubs[i].compiled(); !ok {
					mu.Lock()
					failed = append(failed, stubs[i])
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failed) == 0 || ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range failed {
		cur := r.snap.Load()
		if cur.entries[st.Tool.Name] == st { // not replaced since
			r.publishLocked(cur.without(st.Tool.Name, cur.Revision))
		}
	}
}

// WaitCompiled waits until the warm-up of the latest full load (and of
// any before it) has compiled every stub (WithLazyCompile; at once
// without it), or ctx ends.
func (r *Registry) WaitCompiled(ctx context.Context) error {
	for {
		r.mu.Lock()
		done := r.warmDone
		r.mu.Unlock()
		if done == nil {
			return nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
		same := r.warmDone == done
		r.mu.Unlock()
		if same {
			return nil
		}
	}
}
