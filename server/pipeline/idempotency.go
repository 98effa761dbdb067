package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/flowdrop/gateway/internal/idempotency"
	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/internal/policy"
)

// Idempotent invocation: a call with an idempotency key runs at most once
// per caller × tool × key within the TTL.
//
//   - The first call claims the key and runs. Its backend call is detached
//     from the caller's cancellation (bounded by the tool's timeout and the
//     gateway's maximum call timeout instead): a caller that gives up and
//     retries — on this replica or another — finds the run's outcome
//     rather than running the tool a second time.
//   - A duplicate while the first runs waits for its outcome until shortly
//     before its own deadline; then (or with no time left at all) it gets
//     Aborted with RetryInfo.
//   - A duplicate after completion gets the stored result, marked
//     replayed; the backend is not called.
//   - Stored: the tool's answers (results, and is_error results: the tool
//     ran and said so). Not stored, so the next try runs: backend transport
//     failures, deadlines, cancellations, the gateway's own refusals (the
//     in-flight limit). Policy refusals happen before dispatch, so a key
//     never stores one.
//   - A result over MaxResultBytes is not stored; the key remembers that
//     the call ran, and a duplicate gets FailedPrecondition naming the
//     bound (a retry would not help: only a new key runs the tool again).
//   - The same key with other normalized arguments is refused
//     (InvalidArgument naming the key). The arguments are compared as a
//     SHA-256 of their deterministic proto encoding: canonical for one
//     gateway build (map order is fixed by Deterministic; a future protobuf
//     library could encode differently, which would make a retry across
//     such an upgrade look like other arguments — refused, never replayed
//     wrongly).
//   - A store that cannot answer (Redis away) fails the call closed:
//     Unavailable with RetryInfo, the tool not run.
type Idempotency struct {
	Store idempotency.Store
	// TTL is how long an outcome is kept.
	TTL time.Duration
	// MaxResultBytes bounds a stored result (its encoded size).
	MaxResultBytes int
	// Lease bounds a running claim: longer than any backend call can take
	// (the gateway's maximum call timeout), so it only ends one whose
	// replica died.
	Lease time.Duration
}

// MaxIdempotencyKeyBytes bounds an idempotency key (like a call id).
const MaxIdempotencyKeyBytes = 256

// Reasons of the idempotency errors.
const (
	ReasonIdempotencyKeyInvalid      Reason = "idempotency-key-invalid"
	ReasonIdempotencyKeyReused       Reason = "idempotency-key-reused"
	ReasonIdempotencyInProgress      Reason = "idempotency-in-progress"
	ReasonIdempotencyResultNotStored Reason = "idempotency-result-not-stored"
	ReasonIdempotencyUnavailable     Reason = "idempotency-unavailable"
)

// LimitMaxResultBytes names the result bound in errors.
const LimitMaxResultBytes = "idempotency.max_result_bytes"

// Retry delays: a duplicate that could not wait tries again soon; a store
// outage is given longer.
const (
	inProgressRetry  = 500 * time.Millisecond
	unavailableRetry = time.Second
)

// waitMargin: a waiting duplicate stops this long before its deadline, so
// its Aborted answer reaches the caller before the deadline does.
const waitMargin = 50 * time.Millisecond

// storeTimeout bounds the detached run's store writes.
const storeTimeout = 5 * time.Second

// claimRounds bounds how often a duplicate whose first call failed tries
// to claim the key itself.
const claimRounds = 3

func checkIdempotencyKey(c *Call) error {
	k := c.IdempotencyKey
	if c.keyConflict {
		return &Error{Code: InvalidArgument, Reason: ReasonIdempotencyKeyInvalid, Tool: c.Tool,
			Message: "two different idempotency keys were given (the request field and the idempotency-key header); send one"}
	}
	if !validCallID(k) || len(k) > MaxIdempotencyKeyBytes {
		return &Error{Code: InvalidArgument, Reason: ReasonIdempotencyKeyInvalid, Tool: c.Tool,
			Message: fmt.Sprintf("idempotency key %q is not usable: want at most %d bytes of printable ASCII, got %d bytes",
				policy.Bound(k), MaxIdempotencyKeyBytes, len(k))}
	}
	return nil
}

// scopedKey is the store's key: a hash of caller × tool × key, so keys of
// different callers never meet and no store holds a caller in clear.
func scopedKey(c *Call) string {
	h := sha256.New()
	for _, s := range []string{c.Caller.Method, c.Caller.Subject, c.Tool, c.IdempotencyKey} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (p *Pipeline) dispatchOnce(ctx context.Context, c *Call) (Result, *Error) {
	id := p.cfg.Idempotency
	hash, err := p.argsHash(c)
	if err != nil {
		return Result{}, p.fail(c, err)
	}
	key := scopedKey(c)
	var token idempotency.Token
	rand.Read(token[:]) // never fails (crypto/rand)
	for range claimRounds {
		e, claimed, err := id.Store.Claim(ctx, key, hash, token, id.Lease)
		if err != nil {
			p.releaseOrphan(key, token)
			return Result{}, p.fail(c, idempotencyUnavailable(c, err))
		}
		if claimed {
			return p.runClaimed(ctx, c, key, token)
		}
		if e.State == idempotency.Running {
			if e.ArgsHash != hash {
				return Result{}, p.fail(c, keyReused(c))
			}
			var found bool
			if e, found, err = p.waitOutcome(ctx, c, key); err != nil {
				return Result{}, p.fail(c, err)
			}
			if !found {
				continue // the first call's outcome was not stored: claim it
			}
		}
		return p.stored(c, e, hash)
	}
	return Result{}, p.fail(c, inProgress(c))
}

// waitOutcome waits for the running call's outcome, until shortly before
// ctx's deadline (or the lease, without one).
func (p *Pipeline) waitOutcome(ctx context.Context, c *Call, key string) (idempotency.Entry, bool, error) {
	until := time.Now().Add(p.cfg.Idempotency.Lease)
	if d, ok := ctx.Deadline(); ok {
		until = d.Add(-waitMargin)
	}
	if time.Until(until) <= 0 {
		return idempotency.Entry{}, false, inProgress(c)
	}
	wctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	e, found, err := p.cfg.Idempotency.Store.Wait(wctx, key)
	switch {
	case err == nil:
		return e, found, nil
	case ctx.Err() != nil:
		return e, false, ctx.Err()
	case wctx.Err() != nil:
		return e, false, inProgress(c)
	}
	return e, false, idempotencyUnavailable(c, err)
}

// stored answers a duplicate from the key's completed entry.
func (p *Pipeline) stored(c *Call, e idempotency.Entry, hash idempotency.Hash) (Result, *Error) {
	if e.ArgsHash != hash {
		return Result{}, p.fail(c, keyReused(c))
	}
	if e.State == idempotency.TooLarge {
		return Result{}, p.fail(c, &Error{Code: FailedPrecondition, Reason: ReasonIdempotencyResultNotStored, Tool: c.Tool,
			Limit: LimitMaxResultBytes,
			Message: fmt.Sprintf("the call with idempotency key %q ran, but its result (%d bytes) was over %s (%d bytes) and was not stored; the tool is not run again for this key: use a new key to run it again",
				policy.Bound(c.IdempotencyKey), e.ResultSize, LimitMaxResultBytes, p.cfg.Idempotency.MaxResultBytes)})
	}
	c.replayed = true
	return Result{Encoded: e.Result, Replayed: true}, nil
}

// dispatched is a detached run's outcome.
type dispatched struct {
	res Result
	err *Error
	run *Call
}

// runClaimed runs the claimed call detached from the caller's
// cancellation, stores its outcome, and answers the caller if it is still
// there.
func (p *Pipeline) runClaimed(ctx context.Context, c *Call, key string, token idempotency.Token) (Result, *Error) {
	run := c.detached()
	done := make(chan dispatched, 1)
	p.detached.add()
	go func() {
		defer p.detached.done()
		// Free of the caller's cancellation, not of the gateway's
		// shutdown (CloseDetached); the outcome is kept either way.
		dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(p.life, cancel)()
		res, e := p.dispatch(dctx, run)
		p.keep(context.WithoutCancel(dctx), run, key, token, res, e)
		done <- dispatched{res, e, run}
	}()
	select {
	case d := <-done:
		c.backend, c.backendTime, c.err = d.run.backend, d.run.backendTime, d.run.err
		return d.res, d.err
	case <-ctx.Done():
		// The run goes on; its outcome is stored for the caller's retry.
		return Result{}, p.fail(c, ctx.Err())
	}
}

// CloseDetached lets the claimed runs still going on past their callers
// finish until ctx is done, then cancels the rest — a cancelled run, like
// any failed one, releases its key, so a retry after the restart runs
// instead of waiting out the claim's lease — and waits (bounded) for them
// to record that. It returns ctx's error when runs had to be cancelled.
func (p *Pipeline) CloseDetached(ctx context.Context) error {
	if p.detached.wait(ctx) == nil {
		return nil
	}
	p.endLife()
	wctx, cancel := context.WithTimeout(context.Background(), storeTimeout+time.Second)
	defer cancel()
	p.detached.wait(wctx)
	return ctx.Err()
}

// runGroup counts goroutines and lets a waiter see it reach zero; unlike a
// sync.WaitGroup it may be added to while someone waits.
type runGroup struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n is back to 0
}

func (g *runGroup) add() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
}

func (g *runGroup) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		close(g.idle)
	}
}

// wait returns nil once the count is 0, or ctx's error.
func (g *runGroup) wait(ctx context.Context) error {
	g.mu.Lock()
	if g.n == 0 {
		g.mu.Unlock()
		return nil
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keep stores a run's outcome, or releases the key when it is not stored,
// under the run's claim (token).
func (p *Pipeline) keep(ctx context.Context, c *Call, key string, token idempotency.Token, res Result, e *Error) {
	id := p.cfg.Idempotency
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	var err error
	release := e != nil || res.InputRequired
	if release {
		// A round that asked for input is no outcome: the key is free
		// for the call's next round.
		err = id.Store.Release(ctx, key, token)
	} else {
		hash, _ := p.argsHash(c)
		enc := encodeResult(res)
		entry := idempotency.Entry{State: idempotency.Done, ArgsHash: hash, Result: enc}
		if len(enc) > id.MaxResultBytes {
			entry = idempotency.Entry{State: idempotency.TooLarge, ArgsHash: hash, ResultSize: len(enc)}
		}
		err = id.Store.Complete(ctx, key, token, entry, id.TTL)
	}
	if errors.Is(err, idempotency.ErrClaimLost) {
		p.cfg.Log.Warn("idempotency store: a call's claim ended (its lease) before its outcome was stored, and another call has the key now; this outcome is not stored",
			"tool", c.Tool)
		return
	}
	if err != nil && release {
		// Unreleased, the claim would refuse the key's retries as in
		// progress until its lease ends; released once the store answers.
		p.cfg.Log.Warn("idempotency store: a failed call's key was not released; it is released once the store answers",
			"tool", c.Tool, "error", err.Error())
		p.releaseOrphan(key, token)
	} else if err != nil {
		p.cfg.Log.Warn("idempotency store: a call's outcome was not recorded; duplicates wait until its claim's lease ends",
			"tool", c.Tool, "error", err.Error())
	}
}

// argsHash is the SHA-256 of the normalized arguments' deterministic
// encoding.
func (p *Pipeline) argsHash(c *Call) (idempotency.Hash, error) {
	args, err := c.Args()
	if err != nil {
		return idempotency.Hash{}, err
	}
	enc, err := proto.MarshalOptions{Deterministic: true}.Marshal(args)
	return idempotency.Hash(sha256.Sum256(enc)), err
}

// encodeResult is the answer as an encoded InvokeResponse (the form
// Result.Encoded carries).
func encodeResult(res Result) []byte {
	if res.Encoded != nil {
		return bytes.Clone(res.Encoded)
	}
	return invokewire.EncodeResponse(res.Value, res.IsError)
}

// detached is a copy of c for a run that may outlive the call: the
// arguments decoded (the received bytes belong to the face's call), the
// outcome fields its own.
func (c *Call) detached() *Call {
	run := *c
	run.args = c.args.detached()
	run.err = nil
	return &run
}

func keyReused(c *Call) *Error {
	return &Error{Code: InvalidArgument, Reason: ReasonIdempotencyKeyReused, Tool: c.Tool,
		Message: fmt.Sprintf("idempotency key %q was first used with other arguments for tool %q; a key names one call: use a new key for new arguments",
			policy.Bound(c.IdempotencyKey), c.Tool)}
}

func inProgress(c *Call) *Error {
	return &Error{Code: Aborted, Reason: ReasonIdempotencyInProgress, Tool: c.Tool, RetryAfter: inProgressRetry,
		Message: fmt.Sprintf("a call with idempotency key %q is still running; retry later with the same key to get its result",
			policy.Bound(c.IdempotencyKey))}
}

func idempotencyUnavailable(c *Call, cause error) *Error {
	if errors.Is(cause, idempotency.ErrFull) {
		cause = fmt.Errorf("%w (every entry is a running claim)", cause)
	}
	return &Error{Code: Unavailable, Reason: ReasonIdempotencyUnavailable, Tool: c.Tool, RetryAfter: unavailableRetry,
		Message: "the idempotency store cannot answer right now; the tool was not run: retry later with the same key",
		Cause:   cause}
}
