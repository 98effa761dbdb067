package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/flowdrop/gateway/internal/policy"
)

// A caller before 2026-07-28 cancels a tools/call by sending
// notifications/cancelled naming the call's request id, in a POST of its
// own: the face is stateless (no session ties the two), and the call's
// own request stays open, so its end says nothing. The face ties them by
// who sent them: an in-flight tools/call is registered under its
// authenticated caller (subject and authentication method) and its
// JSON-RPC id, and a notifications/cancelled from the same caller naming
// that id cancels it — the call's context ends, and with it the backend
// call (an upstream MCP server's request is aborted and sent its own
// notifications/cancelled). Only the caller that sent a call can cancel
// it. Two calls in flight under one caller and one id (two clients sharing
// a credential) cannot be told apart: neither is cancelled. The
// registration is per replica; in a fleet (CancelFleet set: Redis) a
// notification that reaches another replica than the call's is carried to
// the one holding it, and the exactly-one rule is the fleet's: the replica
// the notification reaches asks every other how many calls they hold under
// the key and the call is ended only when the fleet holds one. That runs
// after the 202 (the notification has no answer), bounded in time
// (fleetCancelWait) and in lookups at once (fleetCancelLookups); when the
// fleet cannot be asked, the replica decides alone as without one.
// From 2026-07-28 a caller cancels by closing its request, which ends the
// call already (PropagateRequestCancellation), so those calls are not
// registered.

// inflightKey names an in-flight call: its caller and its request id as
// the JSON text it arrived in (1 and "1" are different ids).
type inflightKey struct {
	subject, method, id string
}

// inflightCall is one registered call: cancel ends its context.
type inflightCall struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// inflightCalls are the registered calls of this replica.
type inflightCalls struct {
	mu    sync.Mutex
	calls map[inflightKey][]*inflightCall
}

// register records a call under k; done forgets it (and releases its
// context) once the call has answered.
func (f *inflightCalls) register(k inflightKey) (call *inflightCall, done func()) {
	ctx, cancel := context.WithCancel(context.Background())
	call = &inflightCall{ctx: ctx, cancel: cancel}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[inflightKey][]*inflightCall{}
	}
	f.calls[k] = append(f.calls[k], call)
	f.mu.Unlock()
	return call, func() {
		f.mu.Lock()
		calls := f.calls[k]
		for i, c := range calls {
			if c == call {
				calls = append(calls[:i], calls[i+1:]...)
				break
			}
		}
		if len(calls) == 0 {
			delete(f.calls, k)
		} else {
			f.calls[k] = calls
		}
		f.mu.Unlock()
		cancel()
	}
}

// held is how many calls are registered under k.
func (f *inflightCalls) held(k inflightKey) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls[k])
}

// cancel cancels the one call registered under k, reporting whether it
// did: none, or more than one, is left alone.
func (f *inflightCalls) cancel(k inflightKey) bool {
	f.mu.Lock()
	calls := f.calls[k]
	var c *inflightCall
	if len(calls) == 1 {
		c = calls[0]
	}
	f.mu.Unlock()
	if c == nil {
		return false
	}
	c.cancel()
	return true
}

// inflightKeyFor is the key of request id (a JSON-RPC id's JSON text)
// from the caller in ctx, false without an authenticated caller or id.
func inflightKeyFor(ctx context.Context, id []byte) (inflightKey, bool) {
	caller, ok := policy.CallerFrom(ctx)
	id = bytes.TrimSpace(id)
	if !ok || len(id) == 0 || bytes.Equal(id, []byte("null")) || len(id) > maxCancelIDBytes {
		return inflightKey{}, false
	}
	return inflightKey{subject: caller.Subject, method: caller.Method, id: string(id)}, true
}

// maxCancelIDBytes bounds a request id the face keys calls by (a caller's
// ids are its own choice; a long one is not registered, so cannot be
// cancelled by notification).
const maxCancelIDBytes = 256

// jsonrpcIDText is id's JSON text.
func jsonrpcIDText(id jsonrpc.ID) []byte {
	b, err := json.Marshal(id.Raw())
	if err != nil {
		return nil
	}
	return b
}

// inflightCtxKey carries a registered call from the HTTP request to the
// tools/call handler (the SDK's handler context has the request's values).
type inflightCtxKey struct{}

// cancelEnvelope is what the face reads of a POST the SDK answers, to
// register a tools/call or act on a notifications/cancelled.
type cancelEnvelope struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// olderRevision reports whether r is a request under a revision before
// 2026-07-28 (its MCP-Protocol-Version header, absent on the oldest).
func olderRevision(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") < RevisionResultType
}

// trackSDKRequest is the SDK's path's part: a POST under an older
// revision holding a single tools/call is registered (r with the call in
// its context, done to call when answered); one holding a
// notifications/cancelled cancels the call it names. Others pass as they
// are.
func (m *Server) trackSDKRequest(r *http.Request, body []byte) (*http.Request, func()) {
	if !olderRevision(r) || !bytes.Contains(body, []byte(`"tools/call"`)) && !bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		return r, func() {}
	}
	var env cancelEnvelope
	if json.Unmarshal(body, &env) != nil {
		return r, func() {}
	}
	switch env.Method {
	case "tools/call":
		k, ok := inflightKeyFor(r.Context(), env.ID)
		if !ok {
			return r, func() {}
		}
		call, done := m.inflight.register(k)
		return r.WithContext(context.WithValue(r.Context(), inflightCtxKey{}, call)), done
	case "notifications/cancelled":
		if k, ok := inflightKeyFor(r.Context(), env.Params.RequestID); ok {
			m.cancelByNotification(r.Context(), k)
		}
	}
	return r, func() {}
}

// CancelFleet carries a notifications/cancelled to the replica that holds
// the call it names (redisstate.Cancels): keys are inflightKey.text.
type CancelFleet interface {
	// Serve answers the other replicas until ctx ends: held counts this
	// replica's calls under a key, cancel ends the one.
	Serve(ctx context.Context, held func(key string) int, cancel func(key string) bool)
	// Cancel ends the one call in the fleet under key (local: how many
	// this replica holds): here when it is this replica's to end.
	Cancel(ctx context.Context, key string, local int, wait time.Duration) (here, cancelled bool, err error)
}

const (
	// fleetCancelWait bounds how long a notification's replica waits for
	// the others' counts.
	fleetCancelWait = time.Second
	// fleetCancelLookups bounds the fleet lookups one replica runs at once;
	// a notification beyond them is decided by this replica alone.
	fleetCancelLookups = 32
)

// cancelByNotification acts on a caller's notifications/cancelled for the
// call under k: alone, or with the fleet (after the notification's answer).
func (m *Server) cancelByNotification(ctx context.Context, k inflightKey) {
	alone := func() {
		if m.inflight.cancel(k) {
			m.log.DebugContext(ctx, "tools/call cancelled by the caller's notifications/cancelled", "caller", policy.Bound(k.subject))
		}
	}
	if m.fleet == nil {
		alone()
		return
	}
	select {
	case m.fleetLookups <- struct{}{}:
	default:
		// Debug: a caller sending notifications in a flood would otherwise
		// write the log's lines itself.
		m.log.DebugContext(ctx, "notifications/cancelled: too many fleet lookups at once; this replica decides alone", "at_once", fleetCancelLookups)
		alone()
		return
	}
	ctx = context.WithoutCancel(withoutSDKValues(ctx))
	go func() {
		defer func() { <-m.fleetLookups }()
		here, elsewhere, err := m.fleet.Cancel(ctx, k.text(), m.inflight.held(k), fleetCancelWait)
		switch {
		case err != nil:
			m.log.WarnContext(ctx, "notifications/cancelled: the other replicas were not asked; this replica decides alone", "error", err)
			alone()
		case here:
			alone()
		case elsewhere:
			m.log.DebugContext(ctx, "tools/call on another replica cancelled by the caller's notifications/cancelled", "caller", policy.Bound(k.subject))
		}
	}()
}

// serveFleet answers the other replicas' lookups until the drain.
func (m *Server) serveFleet() {
	defer close(m.fleetDone)
	m.fleet.Serve(m.drain, func(key string) int {
		if k, ok := parseInflightKey(key); ok {
			return m.inflight.held(k)
		}
		return 0
	}, func(key string) bool {
		k, ok := parseInflightKey(key)
		return ok && m.inflight.cancel(k)
	})
}

// text is k as a fleet key: a JSON array, so no member can run into the
// next.
func (k inflightKey) text() string {
	b, _ := json.Marshal([3]string{k.subject, k.method, k.id})
	return string(b)
}

func parseInflightKey(s string) (inflightKey, bool) {
	var a [3]string
	if json.Unmarshal([]byte(s), &a) != nil || a[0] == "" || a[2] == "" {
		return inflightKey{}, false
	}
	return inflightKey{subject: a[0], method: a[1], id: a[2]}, true
}

// withInflightCancel is ctx ended also when the call registered for it is
// cancelled by notification; stop releases it.
func withInflightCancel(ctx context.Context) (context.Context, func()) {
	call, ok := ctx.Value(inflightCtxKey{}).(*inflightCall)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(call.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}
