package mcptasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// A task of a stdio or legacy HTTP+SSE upstream lives on a connection
// that exists in one replica's process (a stdio server is each replica's
// own child; a legacy SSE session's answers arrive on the GET stream the
// making replica holds). Its record's Session is a held key naming that
// replica and the connection (HeldKey), and another replica relays the
// task's requests to it (Relay: over the fleet's Redis,
// internal/redisstate/taskrelay.go). The replica the key names runs the
// request on that connection, if it still has it, under its own guards.

// heldPrefix begins a held key (an HTTP upstream's session id is not
// read as one: the holder runs a request only on the connection of the
// upstream the asker names, under the connection's random instance).
const heldPrefix = "held:"

// maxHeldPart bounds a replica id and a connection instance in a key.
const maxHeldPart = 64

// HeldKey is the Session of a task on connection instance, which only
// replica holds.
func HeldKey(replica, instance string) string {
	return heldPrefix + replica + "." + instance
}

// ParseHeldKey is the replica and the connection a held key names; false
// for any other session.
func ParseHeldKey(s string) (replica, instance string, ok bool) {
	rest, found := strings.CutPrefix(s, heldPrefix)
	if !found {
		return "", "", false
	}
	replica, instance, found = strings.Cut(rest, ".")
	if !found || !heldPart(replica) || !heldPart(instance) {
		return "", "", false
	}
	return replica, instance, true
}

// heldPart: a replica id or an instance, as the gateway makes them (hex).
func heldPart(s string) bool {
	if s == "" || len(s) > maxHeldPart {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// RelayRequest is one task request relayed to the replica holding the
// task's connection.
type RelayRequest struct {
	// Method is tasks/get, tasks/result, tasks/cancel, or RelayAnswerMethod:
	// the answer to the upstream's request for input AnswerID.
	Method string `json:"m"`
	// URL is the upstream's (the holder's connection must be to it);
	// Instance the connection's.
	URL      string `json:"u"`
	Instance string `json:"i"`
	// TaskID is the upstream's task id.
	TaskID string `json:"t"`
	// Limit bounds the answer's result, in bytes (the asker's backend
	// receive limit; the holder's own applies too).
	Limit int64 `json:"l"`
	// AnswerID is the upstream's request id (its JSON text) an answer is
	// to; AnswerResult the answer, or AnswerCode and AnswerMessage its
	// error (RelayAnswerMethod only).
	AnswerID      json.RawMessage `json:"ai,omitempty"`
	AnswerResult  json.RawMessage `json:"ar,omitempty"`
	AnswerCode    int64           `json:"ac,omitempty"`
	AnswerMessage string          `json:"am,omitempty"`
}

// RelayAnswerMethod relays a caller's answer to an upstream's request for
// input, read earlier on the task's connection, to the replica holding it.
const RelayAnswerMethod = "answer"

// MaxRelayRequestBytes bounds a relayed request's fields together, but an
// answer's; MaxRelayAnswerBytes an answer's result and message (a larger
// one is not relayed).
const (
	MaxRelayRequestBytes = 2048
	MaxRelayAnswerBytes  = 32 << 10
)

// maxAnswerIDBytes bounds an upstream request id an answer names.
const maxAnswerIDBytes = 256

// Check refuses a request over its bounds or not a task request.
func (r RelayRequest) Check() error {
	if r.Method == RelayAnswerMethod {
		switch {
		case !heldPart(r.Instance) || r.URL == "" || len(r.URL) > MaxRelayRequestBytes:
			return errors.New("relayed answer: a connection and an upstream are required")
		case len(r.AnswerID) == 0 || len(r.AnswerID) > maxAnswerIDBytes || !json.Valid(r.AnswerID):
			return errors.New("relayed answer: not a request id")
		case len(r.AnswerResult)+len(r.AnswerMessage) > MaxRelayAnswerBytes:
			return errors.New("relayed answer: over its bounds")
		case (r.AnswerCode == 0) == (len(r.AnswerResult) == 0):
			return errors.New("relayed answer: a result or an error, not both")
		}
		return nil
	}
	switch {
	case r.Method != "tasks/get" && r.Method != "tasks/result" && r.Method != "tasks/cancel":
		return errors.New("relayed task request: not a task method")
	case !heldPart(r.Instance) || r.URL == "" || r.TaskID == "" || r.Limit < 0:
		return errors.New("relayed task request: a connection, an upstream, a task id and a limit are required")
	case len(r.URL)+len(r.TaskID) > MaxRelayRequestBytes:
		return errors.New("relayed task request: over its bounds")
	case len(r.AnswerID)+len(r.AnswerResult)+len(r.AnswerMessage) > 0:
		return errors.New("relayed task request: an answer's fields on a task request")
	}
	return nil
}

// RelayAnswer is the holder's answer: the upstream's result, its JSON-RPC
// error (code and message only), or what kept it from one (Failure).
type RelayAnswer struct {
	Result  json.RawMessage `json:"r,omitempty"`
	Code    int64           `json:"c,omitempty"`
	Message string          `json:"m,omitempty"`
	Failure string          `json:"f,omitempty"`
}

// The failures a holder answers.
const (
	// FailureGone: the holder no longer has the connection (the process
	// ended, or the session did): the task is gone with it.
	FailureGone = "gone"
	// FailureTooLarge: the upstream's answer was over the limit.
	FailureTooLarge = "large"
	// FailureTimeout: the upstream did not answer within the request's
	// budget.
	FailureTimeout = "timeout"
	// FailureUpstream: the upstream request failed otherwise (the cause is
	// in the holder's log).
	FailureUpstream = "upstream"
)

// MaxRelayMessageBytes bounds an upstream's error message carried back.
const MaxRelayMessageBytes = 1024

// ErrHolderUnavailable: the replica holding the task's connection could
// not be asked or did not answer (it is gone, Redis is down, it is busy,
// or the request's budget ran out first). The task may well exist.
var ErrHolderUnavailable = errors.New("the gateway replica holding the task's upstream connection did not answer")

// Relay carries task requests to the replica holding the connection.
type Relay interface {
	// Self is this replica's id, named by the keys of the tasks it holds.
	Self() string
	// Serve runs handle for every request relayed to this replica until
	// ctx ends; handle's ctx ends with the asker's budget.
	Serve(ctx context.Context, handle func(context.Context, RelayRequest) RelayAnswer)
	// Ask relays req to replica holder and waits for its answer until ctx
	// ends; an error wrapping ErrHolderUnavailable when none came.
	Ask(ctx context.Context, holder string, req RelayRequest) (RelayAnswer, error)
}
