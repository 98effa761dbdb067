//go:build !race

package mcpupstream

// raceEnabled: see race_on_test.go.
const raceEnabled = false
