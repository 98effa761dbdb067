// Package idempotency is the store behind idempotent tool calls: per
// scoped key (caller × tool × idempotency key, hashed by the caller of
// this package), a running claim, then the call's stored outcome for a
// TTL. Three stores implement it: Memory (one process, bounded), Bolt (one
// node, survives a restart) and, in internal/redisstate, Redis (a fleet).
// It knows nothing of transports: results are opaque bytes.
package idempotency

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// State is what an entry holds.
type State uint8

const (
	// Running: a call with the key is being carried out.
	Running State = 1
	// Done: the call's outcome is stored (Entry.Result).
	Done State = 2
	// TooLarge: the call completed, but its result was over the store's
	// size bound and was not stored (Entry.ResultSize says how big it was).
	TooLarge State = 3
)

// Hash is a SHA-256 of the call's normalized arguments.
type Hash [32]byte

// Token tells one claim from another: Complete and Release act only while
// the key still holds the claim they were given, so a call that outlived
// its lease cannot overwrite, or drop, the claim a later call made.
type Token [16]byte

// Entry is one key's record.
type Entry struct {
	State    State
	ArgsHash Hash
	// Token is a Running entry's claim.
	Token Token
	// Result is the stored outcome (Done).
	Result []byte
	// ResultSize is the size of the result that was not stored (TooLarge).
	ResultSize int
}

// Store keeps entries. Every method is safe for concurrent use; an error
// means the store could not answer (the caller fails closed).
type Store interface {
	// Claim records key as Running with hash under token for lease,
	// unless the key has a live entry: then it returns that entry and
	// claimed == false.
	Claim(ctx context.Context, key string, hash Hash, token Token, lease time.Duration) (existing Entry, claimed bool, err error)
	// Complete replaces the claim token made with its final entry (Done
	// or TooLarge), kept for ttl, and wakes the key's waiters. It also
	// stores e when the claim's lease ended and the key is free; when the
	// key holds another live entry it stores nothing: ErrClaimLost.
	Complete(ctx context.Context, key string, token Token, e Entry, ttl time.Duration) error
	// Release drops the claim token made, whose outcome is not stored (the
	// next call with the key runs), and wakes the key's waiters; a free
	// key is left free; another live entry is left: ErrClaimLost.
	Release(ctx context.Context, key string, token Token) error
	// Wait blocks while the key is Running, until ctx ends (its error).
	// found == false: the claim was released or expired.
	Wait(ctx context.Context, key string) (e Entry, found bool, err error)
	// Close releases the store.
	Close() error
}

// ErrFull is Claim's error when a bounded store holds only running claims
// and live entries it may not evict.
var ErrFull = errors.New("idempotency store full")

// ErrClaimLost is Complete's and Release's error when the key no longer
// holds their claim (its lease ended and another call claimed the key, or
// stored an outcome): the other entry stands.
var ErrClaimLost = errors.New("idempotency claim lost: its lease ended and the key is another call's")

// Holds reports whether e, a key's live entry, is the claim token made.
func (e Entry) Holds(token Token) bool { return e.State == Running && e.Token == token }

// Encode is an entry's stored form (Bolt, Redis): state, hash, then the
// claim's token (Running), the result (Done) or its size (TooLarge).
func Encode(e Entry) []byte {
	b := make([]byte, 0, 1+len(e.ArgsHash)+max(len(e.Result), len(e.Token)))
	b = append(b, byte(e.State))
	b = append(b, e.ArgsHash[:]...)
	switch e.State {
	case Running:
		b = append(b, e.Token[:]...)
	case Done:
		b = append(b, e.Result...)
	case TooLarge:
		b = binary.BigEndian.AppendUint64(b, uint64(e.ResultSize))
	}
	return b
}

// errCorrupt: a stored entry that Encode did not write.
var errCorrupt = errors.New("idempotency store: corrupt entry")

// Decode reads Encode's form; the result is copied out of b.
func Decode(b []byte) (Entry, error) {
	var e Entry
	if len(b) < 1+len(e.ArgsHash) {
		return e, errCorrupt
	}
	e.State = State(b[0])
	copy(e.ArgsHash[:], b[1:])
	rest := b[1+len(e.ArgsHash):]
	switch e.State {
	case Running:
		// A claim written without a token (before tokens) is nobody's
		// now: it only waits out its lease.
		if len(rest) != 0 && len(rest) != len(e.Token) {
			return e, errCorrupt
		}
		copy(e.Token[:], rest)
	case Done:
		e.Result = append([]byte{}, rest...)
	case TooLarge:
		if len(rest) != 8 {
			return e, errCorrupt
		}
		e.ResultSize = int(binary.BigEndian.Uint64(rest))
	default:
		return e, errCorrupt
	}
	return e, nil
}

// waiters wakes the goroutines waiting on a key in this process: Watch
// before reading the key's state, so a Complete between the read and the
// wait still wakes the waiter.
type waiters struct {
	ch map[string]chan struct{}
}

func (w *waiters) watch(key string) <-chan struct{} {
	if w.ch == nil {
		w.ch = map[string]chan struct{}{}
	}
	c, ok := w.ch[key]
	if !ok {
		c = make(chan struct{})
		w.ch[key] = c
	}
	return c
}

func (w *waiters) wake(key string) {
	if c, ok := w.ch[key]; ok {
		close(c)
		delete(w.ch, key)
	}
}
