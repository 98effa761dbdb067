//go:build !race

package repairstats

// raceEnabled: see race_on_test.go.
const raceEnabled = false
