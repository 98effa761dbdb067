package mcpupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller is a session to an upstream MCP server over streamable HTTP whose
// tools/call requests are sent by the gateway itself (CallTool) on the
// session the go-sdk made: the SDK keeps initialize, notifications, lists
// and the session's end. The SDK decodes every message with a fresh
// 32 KiB-buffered decoder, and returns a call as soon as its answer is
// read, racing the read of the stream's end with the call's cancellation,
// which closes the connection; CallTool decodes with pooled buffers and
// reads the answer's body to its end before returning, so the connection
// is reused. The answer is decoded as the SDK decodes it (callresult.go),
// held equal to it by TestCallerMatchesSDK.
type Caller struct {
	// Session is the go-sdk session: the one CallTool's requests belong to.
	Session *mcp.ClientSession

	endpoint string
	client   *http.Client
	// maxEvent bounds one server-sent event, as the SDK's transport does
	// (its MaxEventSize, resolved); also the bound on a JSON answer.
	maxEvent int
	// sdk sends calls through the SDK: the session has options (handlers,
	// capabilities) whose effect on a call CallTool does not reproduce.
	sdk bool
	// legacySSE: the session is over the legacy HTTP+SSE transport
	// (Measured).
	legacySSE bool
	ids       atomic.Uint64
	// meta is the SEP-2575 per-request _meta the SDK adds to every request
	// from protocol revision 2026-07-28 on (nil before it), declaring what
	// the session declared (ConnectOptions.Input); metas are its forms for
	// each subset of that (kindsIndex), a call's declaring what its caller
	// can answer besides (WithCallerInput).
	meta     json.RawMessage
	metas    [4]json.RawMessage
	declared InputKinds
	// side carries the gateway's own requests and a call's progress on a
	// stdio or legacy SSE session (side.go); nil over streamable HTTP.
	side *sideConn
}

// requestMeta is the per-request _meta on revision pv declaring k: the
// SDK's default client capabilities (roots, listChanged) and, as its
// client declares them for the handlers it has, sampling and form
// elicitation — as its toV2 writes them (TestCallerMatchesSDK).
func requestMeta(pv string, k InputKinds) (json.RawMessage, error) {
	caps := map[string]any{"roots": map[string]any{"listChanged": true}}
	if k.Elicitation {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	if k.Sampling {
		caps["sampling"] = map[string]any{}
	}
	return json.Marshal(map[string]any{
		mcp.MetaKeyProtocolVersion:    pv,
		mcp.MetaKeyClientInfo:         clientInfo,
		mcp.MetaKeyClientCapabilities: caps,
	})
}

func kindsIndex(k InputKinds) int {
	i := 0
	if k.Elicitation {
		i |= 1
	}
	if k.Sampling {
		i |= 2
	}
	return i
}

// metaFor is the _meta of a call under ctx: what the session declared, and
// of that only what the call's caller can answer when ctx says
// (WithCallerInput).
func (c *Caller) metaFor(ctx context.Context) json.RawMessage {
	k, ok := callerInputFrom(ctx)
	if !ok || c.meta == nil {
		return c.meta
	}
	k.Elicitation = k.Elicitation && c.declared.Elicitation
	k.Sampling = k.Sampling && c.declared.Sampling
	return c.metas[kindsIndex(k)]
}

// clientInfo is what the gateway's sessions say they are.
var clientInfo = &mcp.Implementation{Name: "flowdrop-gateway", Version: "1"}

// revisionRequestMeta is the first protocol revision whose requests carry
// _meta (protocolVersion, clientInfo, clientCapabilities) and the
// Mcp-Method and Mcp-Name headers (the SDK's usesNewProtocol and
// setStandardHeaders).
const revisionRequestMeta = "2026-07-28"

// ConnectCaller is Connect for a Caller: the SDK's session and CallTool
// share one HTTP client, so the credential, origin pin, redirect refusal
// and response budget hold for both.
func ConnectCaller(ctx context.Context, url string, h Header, o ConnectOptions) (*Caller, error) {
	return connectHTTP(ctx, url, h, o)
}

// connectStreamable is ConnectCaller over streamable HTTP with client
// (HTTPClient).
func connectStreamable(ctx context.Context, url string, client *http.Client, o ConnectOptions) (*Caller, error) {
	t := streamableWith(url, client, o)
	sdk := o.Client != nil && !o.ClientNotificationsOnly
	if o.Input != (InputKinds{}) {
		o.Client = withInputHandlers(o.Client, o.Input)
	}
	cs, err := connect(ctx, t, o)
	if err != nil {
		return nil, err
	}
	c := &Caller{Session: cs, endpoint: url, client: client, maxEvent: t.MaxEventSize, sdk: sdk}
	if c.maxEvent == 0 {
		c.maxEvent = mcp.DefaultMaxEventSize
	}
	if pv := c.revision(); pv >= revisionRequestMeta {
		c.declared = o.Input
		for k := range c.metas {
			kinds := InputKinds{Elicitation: k&1 != 0, Sampling: k&2 != 0}
			if (kinds.Elicitation && !o.Input.Elicitation) || (kinds.Sampling && !o.Input.Sampling) {
				continue
			}
			meta, err := requestMeta(pv, kinds)
			if err != nil {
				cs.Close()
				return nil, err
			}
			c.metas[k] = meta
		}
		c.meta = c.metas[kindsIndex(o.Input)]
	}
	return c, nil
}

// Measured reports whether the session's answers are measured once read
// rather than cut off at the response budget (WithResponseLimit): over
// legacy SSE every answer shares the session's one stream, which no call's
// budget binds.
func (c *Caller) Measured() bool { return c.legacySSE }

// Close ends the session.
func (c *Caller) Close() error { return c.Session.Close() }

func (c *Caller) revision() string {
	if r := c.Session.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// errNoAnswer is a call's error when the upstream ended its answer's stream
// without the answer.
var errNoAnswer = errors.New("request terminated without response")

// drainMax and drainWait bound what is read of a response after the
// call's answer, so its connection can be reused: an upstream that sends
// more, or does not end the stream, costs the connection instead.
const (
	drainMax  = 64 << 10
	drainWait = 100 * time.Millisecond
)

// CallTool calls the upstream tool name with args (a JSON object; none:
// {}). Errors are as the SDK's: an upstream's JSON-RPC error is a
// *jsonrpc.Error, an expired session wraps mcp.ErrSessionMissing, a
// redirect ErrRedirect; cancelling ctx aborts the HTTP request.
func (c *Caller) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	return c.CallToolProgress(ctx, name, args, nil)
}

// Progress is one notifications/progress of a call, as the upstream sent it.
type Progress struct {
	Progress, Total float64
	Message         string
}

// CallToolProgress is CallTool that, when onProgress is not nil, asks the
// upstream for progress with a token of the gateway's own (the call's
// request id, never a caller's token) and hands onProgress, on the
// calling goroutine, each notifications/progress for that token that
// arrives on the answer's stream before the answer. A session through the
// SDK (sdk) reports none and sends no token: the SDK's client takes
// progress per session, not per call.
func (c *Caller) CallToolProgress(ctx context.Context, name string, args json.RawMessage, onProgress func(Progress)) (*mcp.CallToolResult, error) {
	return c.CallToolRound(ctx, name, args, onProgress, nil)
}

// Retry is a multi round-trip call's retry (MCP 2026-07-28, SEP-2322):
// the caller's answers to the upstream's input requests and the state the
// upstream asked to get back.
type Retry struct {
	// Responses is the inputResponses object (JSON), State the
	// requestState ("" when the upstream gave none).
	Responses json.RawMessage
	State     string
}

// CallToolRound is CallToolProgress as a round of a multi round-trip
// call: with retry, the request carries its inputResponses and
// requestState. An upstream asking for input answers with a result whose
// InputRequests is not nil (and its RequestState); the caller decides
// what to do with it. A session through the SDK sends no retry (its
// client fulfils input requests itself) and is refused one.
func (c *Caller) CallToolRound(ctx context.Context, name string, args json.RawMessage, onProgress func(Progress), retry *Retry) (*mcp.CallToolResult, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if c.sdk {
		if retry != nil {
			return nil, errors.New("a multi round-trip retry cannot be sent through the SDK's session")
		}
		return CallThroughSDK(ctx, c.Session, &mcp.CallToolParams{Name: name, Arguments: args})
	}
	body := getBuffer()
	defer putBuffer(body)
	id := "flowdrop-" + strconv.FormatUint(c.ids.Add(1), 10)
	if err := c.writeRequestMeta(body, id, name, args, onProgress != nil, retry, c.metaFor(ctx)); err != nil {
		return nil, err
	}
	ans, err := c.exchange(ctx, id, "tools/call", name, c.Session.ID(), body.Bytes(), onProgress)
	if err != nil {
		return nil, err
	}
	return decodeCallToolResultPart(ans.Result)
}

// exchange sends the request body (id, method; name is tools/call's tool,
// for the Mcp-Name header) on the upstream session sid and reads its
// answer: the upstream's JSON-RPC error is the error. onProgress is as
// CallToolProgress's.
func (c *Caller) exchange(ctx context.Context, id, method, name, sid string, body []byte, onProgress func(Progress)) (*message, error) {
	// reqCtx ends the request: at the call's end, or when draining its
	// body after the answer takes too long.
	reqCtx, endReq := context.WithCancel(ctx)
	defer endReq()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	pv := c.revision()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if pv != "" {
		req.Header.Set("Mcp-Protocol-Version", pv)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if pv >= revisionRequestMeta {
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			go c.notifyCancelled(ctx, id)
		}
		return nil, fmt.Errorf("sending %q: %w", method, err)
	}
	defer drainClose(resp.Body, endReq)
	if err := c.checkStatus(resp, method, sid); err != nil {
		return nil, err
	}
	var ans *message
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		ans, err = c.readJSON(resp.Body, method)
	case "text/event-stream":
		ans, err = c.readStream(ctx, resp.Body, method, id, sid, onProgress)
	default:
		return nil, fmt.Errorf("sending %q: unsupported content type %q", method, mediaType(resp.Header.Get("Content-Type")))
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			go c.notifyCancelled(ctx, id)
			return nil, fmt.Errorf("%w: %v", ctxErr, err)
		}
		return nil, err
	}
	if ans.isRequest() || ans.ID != id {
		return nil, fmt.Errorf("the upstream's JSON answer to %q is not its response", method)
	}
	if ans.Error != nil {
		return nil, ans.Error
	}
	return ans, nil
}

// writeRequest is the tools/call request, as the SDK writes it (params:
// name, arguments, and _meta from revision 2026-07-28 on); with progress,
// _meta also carries the progressToken id; a retry adds inputResponses
// and requestState after the arguments, as the SDK's CallToolParams does.
func (c *Caller) writeRequest(b *bytes.Buffer, id, name string, args json.RawMessage, progress bool, retry *Retry) error {
	return c.writeRequestMeta(b, id, name, args, progress, retry, c.meta)
}

// writeRequestMeta is writeRequest with meta for c.meta (metaFor).
func (c *Caller) writeRequestMeta(b *bytes.Buffer, id, name string, args json.RawMessage, progress bool, retry *Retry, meta json.RawMessage) error {
	qname, err := json.Marshal(name)
	if err != nil {
		return err
	}
	b.WriteString(`{"jsonrpc":"2.0","id":"`)
	b.WriteString(id)
	b.WriteString(`","method":"tools/call","params":{`)
	switch {
	case progress && meta != nil: // meta is a non-empty object
		b.WriteString(`"_meta":{"progressToken":"`)
		b.WriteString(id)
		b.WriteString(`",`)
		b.Write(meta[1:])
		b.WriteByte(',')
	case progress:
		b.WriteString(`"_meta":{"progressToken":"`)
		b.WriteString(id)
		b.WriteString(`"},`)
	case meta != nil:
		b.WriteString(`"_meta":`)
		b.Write(meta)
		b.WriteByte(',')
	}
	b.WriteString(`"name":`)
	b.Write(qname)
	b.WriteString(`,"arguments":`)
	b.Write(args)
	if retry != nil {
		if len(retry.Responses) > 0 {
			b.WriteString(`,"inputResponses":`)
			b.Write(retry.Responses)
		}
		if retry.State != "" {
			st, err := json.Marshal(retry.State)
			if err != nil {
				return err
			}
			b.WriteString(`,"requestState":`)
			b.Write(st)
		}
	}
	b.WriteString(`}}`)
	return nil
}

// checkStatus is the SDK's checkResponse: a transient status is an error;
// another failure status carrying a JSON-RPC error is that error; 404 on a
// session is mcp.ErrSessionMissing.
func (c *Caller) checkStatus(resp *http.Response, method, sid string) error {
	switch resp.StatusCode {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return fmt.Errorf("sending %q: %v", method, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		if m, err := c.readJSON(resp.Body, method); err == nil && !m.isRequest() && m.Error != nil {
			return fmt.Errorf("sending %q: %w: %v", method, m.Error, http.StatusText(resp.StatusCode))
		}
		if resp.StatusCode == http.StatusNotFound && sid != "" {
			return fmt.Errorf("sending %q: failed to connect (session ID: %v): %w", method, sid, mcp.ErrSessionMissing)
		}
		return fmt.Errorf("sending %q: %v", method, http.StatusText(resp.StatusCode))
	}
	if got := resp.Header.Get("Mcp-Session-Id"); got != "" && sid != "" && got != sid {
		return fmt.Errorf("mismatching session IDs %q and %q", sid, got)
	}
	return nil
}

// readJSON reads one message, at most maxEvent bytes.
func (c *Caller) readJSON(r io.Reader, method string) (*message, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	limit := int64(c.maxEvent)
	if limit < 0 {
		limit = 1<<63 - 2
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, fmt.Errorf("sending %q: failed to read body: %v", method, err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("sending %q: the answer is over %d bytes", method, limit)
	}
	m, err := decodeMessage(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("sending %q: failed to decode response: %v", method, err)
	}
	return m, nil
}

// readStream reads the answer's event stream up to the answer to id
// (events.go), answering the upstream's requests on the way (answer) in
// the session sid the request was sent on.
func (c *Caller) readStream(ctx context.Context, body io.Reader, method, id, sid string, onProgress func(Progress)) (*message, error) {
	s := newEventScanner(body, c.maxEvent)
	defer s.release()
	for {
		ev, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errNoAnswer
			}
			return nil, fmt.Errorf("sending %q: %w", method, err)
		}
		if len(ev.data) == 0 || (ev.name != "" && ev.name != "message") {
			continue
		}
		m, err := decodeMessage(ev.data)
		if err != nil {
			return nil, fmt.Errorf("sending %q: failed to decode event: %v", method, err)
		}
		switch {
		case m.isRequest() && m.hasID():
			if err := c.answer(ctx, sid, m); err != nil {
				return nil, err
			}
		case m.isRequest(): // a notification: this call's progress is relayed, the rest (log lines) not the gateway's to act on
			if onProgress != nil && m.Method == "notifications/progress" {
				if p, ok := progressFor(ev.data, id); ok {
					onProgress(p)
				}
			}
		case m.ID == id:
			return m, nil
		}
	}
}

// progressFor is the progress a notifications/progress reports for the
// token id, or false: for another token, or malformed (ignored, as the
// SDK ignores a notification it cannot decode).
func progressFor(data []byte, id string) (Progress, bool) {
	var n struct {
		Params struct {
			Token    any     `json:"progressToken"`
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
			Message  string  `json:"message"`
		} `json:"params"`
	}
	if unmarshal(data, &n) != nil {
		return Progress{}, false
	}
	p := n.Params
	if tok, ok := p.Token.(string); !ok || tok != id {
		return Progress{}, false
	}
	return Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}, true
}

// notifyCancellationTimeout bounds notifyCancelled, as the SDK bounds its
// own notice.
const notifyCancellationTimeout = 5 * time.Second

// notifyCancelled tells the upstream a call ended before its answer
// (notifications/cancelled, best effort, as the SDK does), so it can stop
// the work; the aborted request alone may not reach the tool.
func (c *Caller) notifyCancelled(ctx context.Context, id string) {
	reason, _ := json.Marshal(fmt.Sprint(ctx.Err()))
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), notifyCancellationTimeout)
	defer stop()
	b := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%q,"reason":%s}}`, id, reason)
	_ = c.post(ctx, c.Session.ID(), "notifications/cancelled", b)
}

// answer answers a request the upstream makes while a call runs (in its
// session sid), as the SDK's client without handlers does: ping is
// answered, roots/list with no roots, a request for the caller's input
// through the call's InputFunc (input.go; none: refused; one answered
// later: nothing now), anything else refused as an unknown method.
func (c *Caller) answer(ctx context.Context, sid string, m *message) error {
	var res []byte
	switch m.Method {
	case "ping":
		res = []byte(`"result":{}`)
	case "roots/list":
		res = []byte(`"result":{"roots":[]}`)
	case "elicitation/create", "sampling/createMessage":
		if res = answerInput(ctx, m); res == nil {
			return nil
		}
	default:
		res = fmt.Appendf(nil, `"error":{"code":%d,"message":"method not found"}`, jsonrpc.CodeMethodNotFound)
	}
	return c.post(ctx, sid, m.Method, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,%s}`, m.rawID, res))
}

// post sends one message that has no answer (a notification, or the
// answer to the upstream's request about what) on the session sid.
func (c *Caller) post(ctx context.Context, sid, about string, msg []byte) error {
	ctx, end := context.WithCancel(ctx)
	defer end()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if pv := c.revision(); pv != "" {
		req.Header.Set("Mcp-Protocol-Version", pv)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("sending %q: %w", about, err)
	}
	drainClose(resp.Body, end)
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return fmt.Errorf("sending %q: %s", about, http.StatusText(resp.StatusCode))
	}
	return nil
}

// drainClose reads what is left of a response (at most drainMax bytes,
// for at most drainWait: then end ends the request) and closes it: a body
// read to its end leaves its connection to the next request.
func drainClose(body io.ReadCloser, end context.CancelFunc) {
	t := time.AfterFunc(drainWait, end)
	_, _ = io.CopyN(io.Discard, body, drainMax)
	t.Stop()
	_ = body.Close()
}

func mediaType(v string) string {
	t, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return t
}

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// keptBuffer is the largest buffer returned to the pool: one large answer
// does not pin its memory.
const keptBuffer = 64 << 10

func getBuffer() *bytes.Buffer { b := buffers.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= keptBuffer {
		buffers.Put(b)
	}
}
