package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultGCPercent is --gc-percent's default. The gateway's live heap is
// small (~2–3 MB: compiled schemas, descriptors, metrics) while each call
// allocates ~13 KB, nearly all inside gRPC's transport. At Go's default of
// 100 the collector then runs every ~2.5 MB allocated — about 35 times a
// second at 6,000 calls/s, each cycle marking the whole live heap and
// shrinking the stacks of idle stream workers, which the next calls grow
// again. 400 spaces cycles four times further apart for ~10 MB more heap
// (measured in BENCHMARKS.md, "Garbage collection").
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
// runtime's memory (debug.SetMemoryLimit, Go's GOMEMLIMIT). Normal traffic
// keeps the heap far below it (a live heap of a few MB, collected at
// --gc-percent), so it costs nothing there; under a burst of large
// requests it makes the collector run before 5× the live heap of garbage
// (what --gc-percent 400 allows) piles up: 16 concurrent 4 MB adversarial
// calls then peak near 225 MB resident instead of ~300–400 MB
// (BENCHMARKS.md, "Adversarial arguments"). A registry whose compiled
// schemas alone approach it (tens of thousands of tools) needs a higher
// value, or collections grow frequent (Go caps their CPU at about half).
const defaultMemoryLimit = 200 << 20

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
		return fmt.Errorf("want a size of at least 1MiB such as 200MiB or 2GiB, or off")
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
