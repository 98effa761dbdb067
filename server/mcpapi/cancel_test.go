package mcpapi

import "testing"

// TestInflightCalls: a notification cancels exactly the one call
// registered under its caller and id; none when the key is unknown, when
// two calls share it, or once the call has answered.
func TestInflightCalls(t *testing.T) {
	t.Parallel()
	a := inflightKey{subject: "a", method: "api-key", id: "7"}
	rows := []struct {
		name, reason string
		register     []inflightKey // registered, in order
		answered     int           // how many of them answered (from the first)
		cancel       inflightKey
		want         bool
	}{
		{"one", "the caller's own call under its id", []inflightKey{a}, 0, a, true},
		{"other caller", "another subject naming the same id", []inflightKey{a}, 0, inflightKey{subject: "b", method: "api-key", id: "7"}, false},
		{"other method", "the same subject authenticated another way is another caller", []inflightKey{a}, 0, inflightKey{subject: "a", method: "jwt", id: "7"}, false},
		{"other id type", `"7" is not 7`, []inflightKey{a}, 0, inflightKey{subject: "a", method: "api-key", id: `"7"`}, false},
		{"ambiguous", "two calls under one key: neither", []inflightKey{a, a}, 0, a, false},
		{"one left", "of two, one answered: the other is the one", []inflightKey{a, a}, 1, a, true},
		{"answered", "a call that answered is forgotten", []inflightKey{a}, 1, a, false},
	}
	for _, row := range rows {
		var f inflightCalls
		var calls []*inflightCall
		var dones []func()
		for _, k := range row.register {
			c, done := f.register(k)
			calls, dones = append(calls, c), append(dones, done)
		}
		for _, done := range dones[:row.answered] {
			done()
		}
		if got := f.cancel(row.cancel); got != row.want {
			t.Errorf("%s: cancel = %v, want %v (%s)", row.name, got, row.want, row.reason)
		}
		ended := 0
		for _, c := range calls[row.answered:] {
			if c.ctx.Err() != nil {
				ended++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[row.want]; ended != want {
			t.Errorf("%s: %d calls in flight ended, want %d (%s)", row.name, ended, want, row.reason)
		}
		for _, done := range dones[row.answered:] {
			done()
		}
		if len(f.calls) != 0 {
			t.Errorf("%s: %d keys left after every call answered", row.name, len(f.calls))
		}
	}
}
