//go:build race

package mcpupstream

// raceEnabled: this test binary runs under the race detector, whose
// sync.Pool drops a share of what is put back, so allocation figures vary;
// allocation assertions are checked by .ci/run's run without -race.
const raceEnabled = true
