//go:build race

package repairstats

// raceEnabled: this test binary runs under the race detector, whose
// instrumentation makes allocation counts vary; allocation assertions are
// checked by .ci/run's run without -race.
const raceEnabled = true
