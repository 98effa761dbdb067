//go:build race

package policy

// raceEnabled: this test binary runs under the race detector, whose
// instrumentation and randomised sync.Pool make allocation counts vary;
// allocation assertions are checked by .ci/run's run without -race.
const raceEnabled = true
