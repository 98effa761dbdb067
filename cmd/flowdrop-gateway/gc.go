package main

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// defaultGCPercent is --gc-percent's default. The gateway's live heap is
// small (~4–5 MB: compiled schemas, descriptors, metrics) while each call
// allocates 13–35 KB. At Go's default of 100 the collector then runs every
// few MB allocated — dozens of times a second under load, each cycle
// marking the whole live heap and shrinking the stacks of idle stream
// workers, which the next calls grow again. 400 spaces cycles four times
// further apart: ~5 % of the gateway's CPU in the collector instead of
// ~10–15 %, for ~20 MiB more resident heap (BENCHMARKS.md, "Where the
// gateway's peak RSS goes", has both measured per setting).
const defaultGCPercent = 400

// gcPercent is --gc-percent: set by parseFlags on every parse.
var gcPercent int

// validateGCPercent checks --gc-percent (GOGC=off is for the environment
// variable, where Go documents it; a flag that turns collection off would
// be one typo from an out-of-memory kill).
func validateGCPercent(p int) error {
	if p < 1 {
		return fmt.Errorf("--gc-percent %d: want a positive percentage (Go's GOGC); 100 is Go's default", p)
	}
	return nil
}

// applyGCPercent sets the collector's target unless GOGC is set in the
// environment (the operator's explicit choice wins over our default). It
// returns the setting in effect and where it came from, for the start-up log.
func applyGCPercent(p int, getenv func(string) string) (setting, source string) {
	if v := getenv("GOGC"); v != "" {
		return v, "GOGC environment variable"
	}
	debug.SetGCPercent(p)
	return fmt.Sprint(p), "--gc-percent"
}

// defaultMemoryLimit is --memory-limit's default: a soft limit on the Go
// runtime's memory (debug.SetMemoryLimit, Go's GOMEMLIMIT). A gateway at
// rest or at thousands of calls a second keeps a live heap of a few MB,
// collected at --gc-percent, far below it; what it bounds is the garbage
// --gc-percent 400 lets pile up (5× the live heap) when the live heap
// grows — with 1,000 slow calls in flight gateway-prod peaked at ~105 MB
// resident with a 200 MiB limit and ~88 MB with this one, and a burst of
// large adversarial requests is collected early too (BENCHMARKS.md,
// "Performance as deployed" and "Adversarial arguments"). A registry
// whose compiled schemas approach it (thousands of tools) needs a higher
// value, or collections grow frequent: watchLiveHeap says so in the log.
const defaultMemoryLimit = 64 << 20

// memoryLimit is --memory-limit: set by parseFlags on every parse.
var memoryLimit byteSize = defaultMemoryLimit

// byteSize is a size flag written as GOMEMLIMIT is: a number of bytes with
// an optional B, KiB, MiB, GiB or TiB suffix; "off" is no limit.
type byteSize int64

func (b *byteSize) String() string {
	switch v := int64(*b); {
	case v == math.MaxInt64:
		return "off"
	case v%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", v>>30)
	case v%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", v>>20)
	}
	return fmt.Sprint(int64(*b))
}

func (b *byteSize) Set(s string) error {
	if s == "off" {
		*b = math.MaxInt64
		return nil
	}
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1<<20/mult || n > math.MaxInt64/mult {
		return fmt.Errorf("want a size of at least 1MiB such as 64MiB or 2GiB, or off")
	}
	*b = byteSize(n * mult)
	return nil
}

// applyMemoryLimit sets the runtime's soft memory limit unless GOMEMLIMIT
// is set in the environment (the operator's explicit choice wins). It
// returns the setting in effect and where it came from, for the start-up log.
func applyMemoryLimit(limit byteSize, getenv func(string) string) (setting, source string) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		return v, "GOMEMLIMIT environment variable"
	}
	debug.SetMemoryLimit(int64(limit))
	return limit.String(), "--memory-limit"
}

// liveHeapWarnShare is the share of the memory limit a live heap may reach
// before the log says to raise the limit: past about half, each collection
// frees less than the heap the next one starts from.
const liveHeapWarnShare = 0.5

// liveHeapWatch warns once when the live heap (what the last collection
// kept) crosses liveHeapWarnShare of the soft memory limit, and again only
// after it fell back under half of that.
type liveHeapWatch struct {
	limit  int64                         // the limit in effect
	live   func() uint64                 // the live heap's bytes
	warn   func(msg string, args ...any) // the logger's Warn
	warned bool
}

func (w *liveHeapWatch) check() {
	if w.limit <= 0 || w.limit == math.MaxInt64 {
		return
	}
	live := float64(w.live())
	switch at := float64(w.limit) * liveHeapWarnShare; {
	case !w.warned && live > at:
		w.warned = true
		w.warn("the live heap is over half the soft memory limit: collections grow frequent as it nears the limit; raise --memory-limit (or GOMEMLIMIT)",
			"live_heap_mib", int64(live)>>20, "limit_mib", w.limit>>20)
	case w.warned && live < at/2:
		w.warned = false
	}
}

// liveHeapBytes reads the live heap from runtime/metrics.
func liveHeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// watchLiveHeap checks the live heap against the limit in effect every
// interval until ctx ends.
func watchLiveHeap(ctx context.Context, interval time.Duration, warn func(string, ...any)) {
	w := &liveHeapWatch{limit: debug.SetMemoryLimit(-1), live: liveHeapBytes, warn: warn}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check()
		}
	}
}
