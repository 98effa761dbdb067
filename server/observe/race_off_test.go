//go:build !race

package observe

// raceEnabled: see race_on_test.go.
const raceEnabled = false
