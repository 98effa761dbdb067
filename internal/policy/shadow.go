package policy

import "fmt"

// Modes of a rule or an authz entry (its mode field).
const (
	// ModeEnforce refuses what the entry refuses (the default, also "").
	ModeEnforce = "enforce"
	// ModeShadow lets the call proceed: what the entry would have refused
	// is recorded (the audit line's shadow_denials, a counter), so a new
	// entry can be watched on real traffic before it is enforced.
	ModeShadow = "shadow"
)

// checkMode validates a mode field; who names the entry.
func checkMode(who, mode string) error {
	switch mode {
	case "", ModeEnforce, ModeShadow:
		return nil
	}
	return fmt.Errorf("%s: mode %q: must be %q or %q", who, mode, ModeEnforce, ModeShadow)
}
