package main

import (
	"fmt"
	"runtime/debug"
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
