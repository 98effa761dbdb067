package mcpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// An upstream's request for its caller's input before 2026-07-28
// (elicitation/create, sampling/createMessage on the call's stream,
// pipeline/inputrelay.go) reaches the caller on the caller's own response
// stream of the call: the face writes the request there under an id of
// its own, "flowdrop-input-<replica>-<random>", and waits. The caller
// answers in a POST of its own (a JSON-RPC response), which may reach any
// replica: the replica it reaches hands it to the waiting call when the
// call is its own (by caller and id: another caller's answer finds
// nothing), else to the replica the id names, over the fleet
// (InputFleet: Redis pub/sub), and answers the POST 202 once the waiting
// call took it, 400 when no call awaits it, 503 when the replica the id
// names cannot be reached (the call then waits out its bound). Only a
// caller whose face session (session.go) declared the kind is asked;
// the wait is bounded (pipeline.InputRelayMaxWait, and the call's own
// deadline), after which the caller is told the request is cancelled
// (notifications/cancelled on the same stream) and the upstream gets
// MCPCodeInputTimeout. Only the fast path's calls can be relayed: the
// SDK's stateless connection refuses a server's request
// (streamableServerConn.Write), so a call the SDK answers has no relay
// and its upstream is refused.

// MCPCodeInputTimeout: the caller did not answer a relayed request for
// input in time (the upstream's error; implementation-defined range).
const MCPCodeInputTimeout = -32013

// inputIDPrefix starts the ids of the requests the face relays.
const inputIDPrefix = "flowdrop-input-"

// maxInputAnswerBody bounds the POST of a caller's answer that the face
// reads as one (the answer itself is bounded by
// pipeline.InputMaxResponseBytes).
const maxInputAnswerBody = pipeline.InputMaxResponseBytes + 4096

// fleetDeliverWait bounds how long a replica waits for the one holding
// the call to say it took an answer.
const fleetDeliverWait = 2 * time.Second

// InputFleet carries a caller's answer to the replica whose call awaits
// it (redisstate.Answers).
type InputFleet interface {
	// Self is this replica's name in the fleet (the ids it mints carry it).
	Self() string
	// Serve hands the answers addressed to this replica to deliver until
	// ctx ends.
	Serve(ctx context.Context, deliver func(key string, answer []byte) bool)
	// Deliver hands answer under key to replica to; delivered when that
	// replica's call took it. An error: the replica could not be asked.
	Deliver(ctx context.Context, to, key string, answer []byte, wait time.Duration) (delivered bool, err error)
}

// inputAnswer is a caller's answer: its result or its error.
type inputAnswer struct {
	Result json.RawMessage `json:"r,omitempty"`
	Error  *jsonrpc.Error  `json:"e,omitempty"`
}

// inputWaits are this replica's relayed requests awaiting answers, by
// caller and id (inflightKey, whose id is the JSON text of the id).
type inputWaits struct {
	mu    sync.Mutex
	calls map[inflightKey]chan inputAnswer
}

func (w *inputWaits) add(k inflightKey) chan inputAnswer {
	ch := make(chan inputAnswer, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[inflightKey]chan inputAnswer{}
	}
	w.calls[k] = ch
	return ch
}

func (w *inputWaits) remove(k inflightKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.calls, k)
}

// deliver hands a to the request awaiting it under k, once: false when
// none awaits (unknown, another caller's, already answered or given up).
func (w *inputWaits) deliver(k inflightKey, a inputAnswer) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.calls[k]
	if !ok {
		return false
	}
	delete(w.calls, k)
	ch <- a
	return true
}

// sseStream is a fast-path call's response stream, which progress and
// relayed requests share: each event written whole and flushed, the
// stream's headers committed at the first.
type sseStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
}

func (s *sseStream) write(msg jsonrpc.Message) {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		setStreamHeaders(s.w.Header())
		s.started = true
	}
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(sseEventPrefix)
	buf.Write(data)
	buf.WriteString(sseEventSuffix)
	_, _ = s.w.Write(buf.Bytes())
	_ = http.NewResponseController(s.w).Flush()
}

// isStarted: an event was written (the answer must follow in the stream).
func (s *sseStream) isStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// faceRelay relays one call's upstream requests for input to its caller.
type faceRelay struct {
	m      *Server
	stream *sseStream
	sess   *faceSession
	caller policy.Caller
}

// can reports whether the caller's session declared what method (with
// params) asks for, and if not which capability it lacks.
func (r *faceRelay) can(method string, params json.RawMessage) (bool, string) {
	switch method {
	case pipeline.MethodElicit:
		var p struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(params, &p)
		if p.Mode == "url" {
			return r.sess.ElicitURL, "elicitation.url"
		}
		return r.sess.ElicitForm, "elicitation"
	case pipeline.MethodCreateMessage:
		return r.sess.Sampling, "sampling"
	case pipeline.MethodListRoots:
		return r.sess.Roots, "roots"
	}
	return false, method
}

// Declares reports whether the caller's session declared the kind of
// input (pipeline.InputElicitation, …): what an upstream may be told the
// call can be asked (backend's callerInput).
func (r *faceRelay) Declares(kind string) bool {
	switch kind {
	case pipeline.InputElicitation:
		return r.sess.ElicitForm || r.sess.ElicitURL
	case pipeline.InputSampling:
		return r.sess.Sampling
	case pipeline.InputRoots:
		return r.sess.Roots
	}
	return false
}

// Ask writes the request on the caller's stream and waits for the answer.
func (r *faceRelay) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, bool, error) {
	if ok, capability := r.can(method, params); !ok {
		return nil, false, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("%s: the caller did not declare the %s capability", method, capability)}
	}
	id := inputIDPrefix + r.m.replica + "-" + randomHex(16)
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		return nil, false, err
	}
	k := inflightKey{subject: r.caller.Subject, method: r.caller.Method, id: string(jsonrpcIDText(rid))}
	ch := r.m.waits.add(k)
	defer r.m.waits.remove(k)
	r.stream.write(&jsonrpc.Request{ID: rid, Method: method, Params: params})
	t := time.NewTimer(pipeline.InputRelayMaxWait)
	defer t.Stop()
	var why string
	select {
	case a := <-ch:
		if a.Error != nil {
			return nil, true, a.Error
		}
		return a.Result, true, nil
	case <-t.C:
		why = fmt.Sprintf("the gateway waited %v for the answer", pipeline.InputRelayMaxWait)
	case <-ctx.Done():
		why = "the call ended before the answer"
	case <-r.m.closed:
		// The face has stopped serving (its connections are closed): nobody
		// is left to answer, and the call must not outlive the face.
		why = "the gateway is shutting down"
	}
	// The caller is told the request no longer awaits its answer.
	reason, _ := json.Marshal(why)
	cancelled, _ := json.Marshal(map[string]any{"requestId": id, "reason": json.RawMessage(reason)})
	r.stream.write(&jsonrpc.Request{Method: "notifications/cancelled", Params: cancelled})
	if ctx.Err() != nil {
		return nil, true, ctx.Err()
	}
	if why == "the gateway is shutting down" {
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": " + why}
	}
	return nil, true, &jsonrpc.Error{Code: MCPCodeInputTimeout, Message: method + ": the caller did not answer within " + pipeline.InputRelayMaxWait.String()}
}

// relayFor is the relay of a fast-path call whose caller has a face
// session, or nil.
func (m *Server) relayFor(ctx context.Context, stream *sseStream) *faceRelay {
	s := sessionFrom(ctx)
	caller, ok := policy.CallerFrom(ctx)
	if s == nil || !ok {
		return nil
	}
	return &faceRelay{m: m, stream: stream, sess: s, caller: caller}
}

// answerEnvelope is what the face reads of a POST that may be a caller's
// answer to a relayed request.
type answerEnvelope struct {
	VersionTag string          `json:"jsonrpc"`
	ID         json.RawMessage `json:"id"`
	Method     json.RawMessage `json:"method"`
	Result     json.RawMessage `json:"result"`
	Error      *jsonrpc.Error  `json:"error"`
}

// recogniseAnswer reports whether body is a JSON-RPC response to a request
// the face relayed (an id it mints): only those are the face's, the rest
// go to the SDK as before.
func recogniseAnswer(body []byte) (*answerEnvelope, bool) {
	if !bytes.Contains(body, []byte(inputIDPrefix)) {
		return nil, false
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	var env answerEnvelope
	if json.Unmarshal(body, &env) != nil || env.VersionTag != "2.0" || env.Method != nil {
		return nil, false
	}
	var id string
	if json.Unmarshal(env.ID, &id) != nil || !strings.HasPrefix(id, inputIDPrefix) {
		return nil, false
	}
	return &env, true
}

// serveAnswer hands a caller's answer to the call awaiting it, here or on
// the replica its id names.
func (m *Server) serveAnswer(w http.ResponseWriter, r *http.Request, env *answerEnvelope) {
	refuse := func(status, code int, reason, msg string) {
		noteRefusal(r, reason)
		data, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: int64(code), Message: msg}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(data)
	}
	var id string
	_ = json.Unmarshal(env.ID, &id)
	caller, ok := policy.CallerFrom(r.Context())
	if !ok || len(env.ID) > maxCancelIDBytes {
		refuse(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "input-answer-unknown", "no request of this gateway awaits this answer")
		return
	}
	a := inputAnswer{Result: env.Result, Error: env.Error}
	if (a.Result == nil) == (a.Error == nil) {
		refuse(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "input-answer-malformed", "a response carries exactly one of result and error")
		return
	}
	if len(a.Result) > pipeline.InputMaxResponseBytes {
		// The call is told too: its upstream gets an error now rather than
		// at the end of the wait.
		a = inputAnswer{Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("the caller's answer is %d bytes, over the gateway's bound of %d", len(a.Result), pipeline.InputMaxResponseBytes)}}
		m.deliverAnswer(r.Context(), caller, id, env.ID, a)
		refuse(http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidParams, "input-answer-too-large", a.Error.Message)
		return
	}
	delivered, err := m.deliverAnswer(r.Context(), caller, id, env.ID, a)
	switch {
	case err != nil:
		m.log.WarnContext(r.Context(), "MCP answer to a relayed request: the replica awaiting it could not be reached", "error", err)
		refuse(http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "input-answer-unreachable", "the gateway could not hand this answer to the call awaiting it; the call will not see it")
	case !delivered:
		refuse(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "input-answer-unknown",
			"no request of this gateway awaits this answer from this caller (an unknown id, another caller's, or one already answered or given up)")
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// deliverAnswer hands a to the call awaiting id (raw: its JSON text) from
// caller: this replica's, or the one the id names over the fleet.
func (m *Server) deliverAnswer(ctx context.Context, caller policy.Caller, id string, raw json.RawMessage, a inputAnswer) (bool, error) {
	k := inflightKey{subject: caller.Subject, method: caller.Method, id: string(bytes.TrimSpace(raw))}
	if canon, err := json.Marshal(id); err == nil {
		k.id = string(canon)
	}
	if m.waits.deliver(k, a) {
		return true, nil
	}
	replica, _, _ := strings.Cut(strings.TrimPrefix(id, inputIDPrefix), "-")
	if m.inputFleet == nil || replica == m.replica || replica == "" {
		return false, nil
	}
	payload, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	return m.inputFleet.Deliver(context.WithoutCancel(withoutSDKValues(ctx)), replica, k.text(), payload, fleetDeliverWait)
}

// serveInputFleet takes the answers other replicas carry to this one's
// calls until the drain.
func (m *Server) serveInputFleet() {
	defer close(m.inputFleetDone)
	m.inputFleet.Serve(m.drain, func(key string, answer []byte) bool {
		k, ok := parseInflightKey(key)
		var a inputAnswer
		if !ok || len(answer) > maxInputAnswerBody || json.Unmarshal(answer, &a) != nil || (a.Result == nil) == (a.Error == nil) {
			return false
		}
		return m.waits.deliver(k, a)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
