package policyreload

import "time"

// MaxHistory bounds the reloads History keeps (the newest).
const MaxHistory = 32

// Event is one reload attempt as History reports it: when, whether the
// policy was swapped in, and the hashes. It carries no error text: a
// refusal's error may name files, and History is shown on the admin
// console (the log has the error).
type Event struct {
	Time time.Time
	// OK: the policy was swapped in (Hash is the new one); otherwise it was
	// refused and Hash is the policy that stayed in force.
	OK       bool
	Hash     string
	Previous string // the hash in force before (OK only)
}

// recordLocked appends e, dropping the oldest past MaxHistory; r.mu is held.
func (r *Reloader[P]) recordLocked(e Event) {
	if len(r.history) == MaxHistory {
		copy(r.history, r.history[1:])
		r.history = r.history[:MaxHistory-1]
	}
	r.history = append(r.history, e)
}

// History is the reload attempts since start, oldest first, at most
// MaxHistory (the newest); the policy in force at start is not one.
func (r *Reloader[P]) History() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.history...)
}
