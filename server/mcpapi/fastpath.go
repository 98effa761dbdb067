package mcpapi

// The tools/call fast path.
//
// Why: the go-sdk v1.8.0's streamable handler decodes a stateless POST's one
// message several times over (readBatch twice, the _meta triple, the
// Mcp-Name check, the params), each time through a json.Decoder that
// allocates fresh 32 KiB buffers: ~300 KB and most of the face's CPU per
// tools/call, the face's hot message. The SDK has no hook for its codec or
// its per-message decoding. So a single JSON-RPC tools/call POST that the
// face can answer exactly as the SDK would is answered here:
//
//   - recognised (recogniseToolsCall) by the SDK's own decoding steps — the
//     same decoder (segmentio's) with the same flags, into the same shapes,
//     parsed once instead of per step, without the per-message buffer;
//   - checked as the SDK checks it (headers, MCP-Protocol-Version, the
//     SEP-2575 _meta triple, Mcp-Method and Mcp-Name);
//   - run through the same handler as the SDK path (observe + toolsCall: the
//     count, the access line, the span, the pipeline call);
//   - answered with the SDK's own encoder (jsonrpc.EncodeMessage) in the
//     SDK's framing: an SSE "message" event, or for 2026-07-28 a JSON-RPC
//     error with a SEP-2575 HTTP status as a plain JSON body; a call whose
//     caller sent a progressToken first gets its backend's progress as
//     notifications/progress events on the same stream (progress.go), as
//     the SDK's path sends them through the request's session.
//
// Everything else (other methods, batches, notifications, anything these
// steps find unusual or wrong) goes to the SDK's handler unchanged, which
// then answers it, errors included, exactly as before. The HTTP middleware
// (origin, authentication, body bounds, access log) runs in front of both.
// TestMCPFastPathMatchesSDK holds the two paths' answers equal;
// FuzzRecogniseToolsCall holds the recogniser to the SDK's decoding.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/sdkjson"
	"github.com/flowdrop/gateway/server/pipeline"
)

// What the fast path mirrors of the go-sdk v1.8.0 (streamable.go,
// streamable_headers.go, shared.go, internal/json).
const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	methodHeader          = "Mcp-Method"
	nameHeader            = "Mcp-Name"
	lastEventIDHeader     = "Last-Event-ID"
	// defaultRevision is what the SDK assumes of a request without a
	// protocol version header.
	defaultRevision = "2025-03-26"
	// SEP-2575 error codes the SDK answers with HTTP 400.
	codeUnsupportedProtocolVersion        = -32022
	codeMissingRequiredClientCapabilities = -32021
	// mcpGoDebugEnv holds the SDK's compatibility switches, which change
	// its answers: the fast path stays off while any is set.
	mcpGoDebugEnv = "MCPGODEBUG"
)

const (
	sseEventPrefix = "event: message\ndata: "
	sseEventSuffix = "\n\n"
	// fastPathBufferLimit: pooled buffers larger than this are dropped.
	fastPathBufferLimit = 64 << 10
)

// fastCall is a tools/call the fast path answers.
type fastCall struct {
	id  jsonrpc.ID
	req *mcp.CallToolRequest
	// rev is the revision the result is shaped for (requestRevision's
	// answer on the SDK path).
	rev string
	// newProtocol: the request follows 2026-07-28 (SEP-2575): the result
	// names the server in _meta, the call ends when the caller hangs up,
	// and some JSON-RPC errors get an HTTP status.
	newProtocol bool
	// extra is the request's HTTP headers as the SDK's path gives them
	// (req.Extra), held here so the call allocates nothing more.
	extra mcp.RequestExtra
}

// callParamsWire is mcp.CallToolParamsRaw as decoded, but for _meta, taken
// as a Go value: segmentio's decoder makes a typed map field (mcp.Meta) with
// room for 64 entries, a map within a Go value with room for none, and is
// otherwise the same code (decodeMapStringInterface) for both.
type callParamsWire struct {
	Meta           any                  `json:"_meta,omitempty"`
	Name           string               `json:"name"`
	Arguments      json.RawMessage      `json:"arguments,omitempty"`
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
	RequestState   string               `json:"requestState,omitempty"`
}

// decodeCallParams is tools/call's params as the SDK decodes them
// (CallToolParamsRaw), or false: params the SDK would refuse, or that carry
// what the face does not answer (an input-required retry). params is
// checked whole, as the SDK checks them (one JSON value, nothing after
// it); decodeCallParamsPart trusts a body already checked.
func decodeCallParams(params []byte) (*mcp.CallToolParamsRaw, bool) {
	if oneJSONValue(params) != nil || sdkjson.CheckDepth(params) != nil {
		return nil, false
	}
	return decodeCallParamsPart(params)
}

// decodeCallParamsPart is decodeCallParams of the params of a body whose
// nesting was checked (sdkjson.UnmarshalPart).
func decodeCallParamsPart(params []byte) (*mcp.CallToolParamsRaw, bool) {
	if bytes.Equal(bytes.TrimSpace(params), []byte("null")) { // no params: the SDK's to refuse
		return nil, false
	}
	var pw callParamsWire
	if !sdkDecodePart(params, &pw) || pw.InputResponses != nil || pw.RequestState != "" {
		return nil, false
	}
	p := &mcp.CallToolParamsRaw{Name: pw.Name, Arguments: pw.Arguments}
	switch meta := pw.Meta.(type) {
	case nil:
	case map[string]any:
		p.Meta = meta
	default: // not an object: the SDK's typed field refuses it
		return nil, false
	}
	return p, true
}

// wireMessage mirrors the SDK's JSON-RPC wire decoding (jsonrpc2.wireDecode).
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// requestMetaDecodes: a 2026-07-28 request's clientInfo (when present) and
// clientCapabilities decode as the SDK's validateRequestMeta decodes them.
func requestMetaDecodes(meta map[string]any) bool {
	if ci, present := meta[mcp.MetaKeyClientInfo]; present {
		var impl *mcp.Implementation
		if !metaDecodes(ci, &impl) {
			return false
		}
	}
	var caps *clientCapabilitiesV2
	return metaDecodes(meta[mcp.MetaKeyClientCapabilities], &caps)
}

// clientCapabilitiesV2 mirrors the SDK's decoding of the 2026-07-28
// clientCapabilities _meta value (protocol.go's unexported type of the same
// name and shape).
type clientCapabilitiesV2 struct {
	mcp.ClientCapabilities
	//lint:ignore SA1019 the SDK's decoding of the field is what is mirrored, deprecated or not.
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// fastPath is the fast path's fixed configuration.
type fastPath struct {
	// versions are the protocol revisions the SDK's server negotiates.
	versions []string
	// answered counts the calls the fast path answered.
	answered atomic.Uint64
	// headerTools (name → true) are the tools whose input schema may
	// carry x-mcp-header annotations, whose Mcp-Param-* headers the SDK
	// checks: their 2026-07-28 calls go to the SDK.
	headerTools sync.Map
}

// newFastPath is the fast path, or nil (with why) when it must stay off.
func newFastPath(sdkOnly bool) (*fastPath, string) {
	if sdkOnly {
		return nil, "configured off"
	}
	if os.Getenv(mcpGoDebugEnv) != "" {
		return nil, mcpGoDebugEnv + " is set: the SDK's answers may differ"
	}
	return &fastPath{versions: mcp.SupportedProtocolVersions()}, ""
}

// noteTool records whether tool's advertised input schema may carry
// x-mcp-header annotations (a schema not held as raw JSON: assume so).
func (f *fastPath) noteTool(name string, schema any) {
	if f == nil {
		return
	}
	if raw, ok := schema.(json.RawMessage); ok && !bytes.Contains(raw, []byte("x-mcp-header")) {
		f.headerTools.Delete(name)
	} else {
		f.headerTools.Store(name, true)
	}
}

func (f *fastPath) forgetTool(name string) {
	if f != nil {
		f.headerTools.Delete(name)
	}
}

// recogniseToolsCall is the fast path's judgement of an authenticated POST
// with body: the call to answer, or false when the SDK must answer. It
// makes the SDK's checks in the SDK's terms and says no at the first one
// that would not pass (the SDK then refuses the request in its own words).
func (f *fastPath) recogniseToolsCall(r *http.Request, body []byte) (*fastCall, bool) {
	if f == nil || r.Method != http.MethodPost || !f.headersOK(r) {
		return nil, false
	}
	return f.recogniseBody(r.Header, body)
}

// headersOK: the SDK's HTTP-level checks of a stateless POST pass.
func (f *fastPath) headersOK(r *http.Request) bool {
	// DNS rebinding protection (on by default in the SDK).
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if isLoopback(la.String()) && !isLoopback(r.Host) {
			return false
		}
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return false
		}
	}
	if jsonOK, streamOK := acceptsBoth(r.Header.Values("Accept")); !jsonOK || !streamOK {
		return false
	}
	if len(r.Header.Values(lastEventIDHeader)) > 0 {
		return false
	}
	return true
}

// recogniseBody is recogniseToolsCall past the HTTP checks: the body as the
// SDK decodes it, and the checks it makes of the message.
func (f *fastPath) recogniseBody(h http.Header, body []byte) (*fastCall, bool) {
	// One JSON object (an array is a batch), valid as readBody requires,
	// within the SDK's nesting bound.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	if !json.Valid(body) || sdkjson.CheckDepth(body) != nil {
		return nil, false
	}
	// Its nesting is checked: the body and its parts decode without
	// walking it again.
	var w wireMessage
	if !sdkDecodePart(body, &w) || w.VersionTag != "2.0" || len(w.Method) == 0 || len(w.Params) == 0 {
		return nil, false
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil || !id.IsValid() { // not a request, or a notification
		return nil, false
	}
	var method string
	if !sdkDecodePart(w.Method, &method) || method != "tools/call" {
		return nil, false
	}
	p, ok := decodeCallParamsPart(w.Params)
	if !ok {
		return nil, false
	}

	// MCP-Protocol-Version against the _meta triple (servePOST).
	header := h.Get(protocolVersionHeader)
	if header != "" && !slices.Contains(f.versions, header) {
		return nil, false
	}
	version := header
	if version == "" {
		version = defaultRevision
	}
	metaVersion, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	if version >= RevisionResultType || metaVersion != "" {
		if header == "" || metaVersion == "" || header != metaVersion {
			return nil, false
		}
	}
	// MCP standard headers (validateMcpHeaders).
	if header != "" && header >= RevisionResultType {
		if h.Get(methodHeader) != "tools/call" {
			return nil, false
		}
		// The SDK reads the name by decoding params as CallToolParams, which
		// differs from CallToolParamsRaw (decoded above) only in taking the
		// arguments as a Go value: the name is p.Name if they decode so.
		if !argumentsDecodeAsValue(w.Params, p.Arguments) || p.Name == "" || h.Get(nameHeader) != p.Name {
			return nil, false
		}
		if _, annotated := f.headerTools.Load(p.Name); annotated {
			return nil, false
		}
	}
	// The session's per-request protocol (validateRequestMeta).
	newProtocol := metaVersion >= RevisionResultType
	if newProtocol {
		if !slices.Contains(f.versions, metaVersion) {
			return nil, false
		}
		if !requestMetaDecodes(p.Meta) {
			return nil, false
		}
	}
	rev := metaVersion
	if rev == "" {
		rev = version
	}
	fc := &fastCall{id: id, req: &mcp.CallToolRequest{Params: p}, rev: rev, newProtocol: newProtocol}
	fc.extra.Header = h
	fc.req.Extra = &fc.extra
	return fc, true
}

// sdkDecode decodes data into v as the SDK's internal json.Unmarshal does
// (its decoder with case-sensitive field names), reporting success.
func sdkDecode(data []byte, v any) bool { return sdkjson.Unmarshal(data, v) == nil }

// sdkDecodePart is sdkDecode of data within a body whose nesting was
// checked (sdkjson.UnmarshalPart).
func sdkDecodePart(data []byte, v any) bool { return sdkjson.UnmarshalPart(data, v) == nil }

// argumentsDecodeAsValue reports whether the SDK decodes params (whose
// arguments, raw, are args) as CallToolParams, arguments into a Go value.
// Syntax aside (already checked), only a number float64 cannot hold fails
// that decoding; arguments with no exponent, no integer part long enough to
// overflow and valid UTF-8 are known to pass without decoding them. Any
// others are decoded to find out.
func argumentsDecodeAsValue(params, args []byte) bool {
	if plainNumbers(args) && utf8.Valid(args) {
		return true
	}
	var named struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments,omitempty"`
	}
	return sdkDecodePart(params, &named)
}

// plainNumbers reports whether every number in the JSON text data is
// written without an exponent and with fewer than 309 integer digits, so
// within float64's range.
func plainNumbers(data []byte) bool {
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		b := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		if b == '"' {
			inString = true
			continue
		}
		if b != '-' && !isDigit(b) {
			continue
		}
		j, intDigits := i, 0
		if data[j] == '-' {
			j++
		}
		for ; j < len(data) && isDigit(data[j]); j++ {
			intDigits++
		}
		if j < len(data) && data[j] == '.' {
			for j++; j < len(data) && isDigit(data[j]); j++ {
			}
		}
		if intDigits >= 309 || (j < len(data) && (data[j] == 'e' || data[j] == 'E')) {
			return false
		}
		i = j - 1
	}
	return true
}

// metaDecodes reports whether the SDK decodes the _meta value raw into v
// (decodeMetaValue: absent or null fails; else re-encoded and decoded).
func metaDecodes(raw, v any) bool {
	if raw == nil {
		return false
	}
	data, err := json.Marshal(raw)
	return err == nil && sdkDecode(data, v)
}

// acceptsBoth is the SDK's Accept check (streamableAccepts).
func acceptsBoth(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// isLoopback is the SDK's loopback test for its DNS rebinding protection
// (internal/util.IsLoopback).
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// serveFastCall runs fc as the SDK path runs a tools/call (the receiving
// middleware's observe and the tools/call handler) and writes the answer.
func (m *Server) serveFastCall(w http.ResponseWriter, r *http.Request, fc *fastCall) {
	ctx := r.Context()
	if !fc.newProtocol {
		// As on the SDK's path, an older client's call is not tied to its
		// HTTP request (server.go, PropagateRequestCancellation), but to
		// its notifications/cancelled (cancel.go).
		ctx = context.WithoutCancel(ctx)
		if k, ok := inflightKeyFor(ctx, jsonrpcIDText(fc.id)); ok {
			call, done := m.inflight.register(k)
			defer done()
			ctx = context.WithValue(ctx, inflightCtxKey{}, call)
		}
	}
	stream := &sseStream{w: w}
	if token := fc.req.Params.GetProgressToken(); token != nil {
		prog := &fastProgress{stream: stream, token: token}
		sink := pipeline.NewProgressSink(prog.emit)
		defer sink.Close()
		ctx = pipeline.WithProgress(ctx, sink)
	}
	if !fc.newProtocol {
		// An upstream's requests for the caller's input go to the caller on
		// this stream (relay.go).
		if relay := m.relayFor(ctx, stream); relay != nil {
			ctx = pipeline.WithInputRelay(ctx, relay)
		}
	}
	handler := m.observe(func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		res, err := m.toolsCall(ctx, req.(*mcp.CallToolRequest), fc.rev)
		pipeline.ProgressFrom(ctx).Close() // the answer follows: no progress after it
		return res, err
	})
	res, err := handler(ctx, "tools/call", fc.req)
	m.writeFastResponse(w, r, fc, res, err, stream.isStarted())
	m.fast.answered.Add(1)
}

// FastCalls is how many tools/call requests the fast path answered.
func (m *Server) FastCalls() uint64 {
	if m.fast == nil {
		return 0
	}
	return m.fast.answered.Load()
}

// writeFastResponse writes the JSON-RPC response to fc as the SDK's
// stateless handler does (streamableServerConn.Write, stream.deliverLocked).
// streaming: progress was written, so the stream is committed and an
// error that would have its own HTTP status is answered in it instead.
func (m *Server) writeFastResponse(w http.ResponseWriter, r *http.Request, fc *fastCall, res mcp.Result, err error, streaming bool) {
	if err == nil && fc.newProtocol {
		annotateServerInfo(res, m.impl)
	}
	// The SDK sets the stream's headers first and replaces only the
	// content type for a SEP-2575 error.
	hd := w.Header()
	setStreamHeaders(hd)
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(sseEventPrefix)
	if err != nil || !appendResultMessage(buf, fc.id, res) {
		buf.Truncate(len(sseEventPrefix))
		data, status := m.encodeFastResponse(fc, res, err)
		if status != 0 && !streaming {
			hd.Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(data)
			return
		}
		buf.Write(data)
	}
	buf.WriteString(sseEventSuffix)
	if !streaming && r.ProtoMajor == 1 && r.ProtoMinor >= 1 {
		// Chunked, as the SDK's flushed stream is, but sent with the end
		// of the response in one write when the handler returns: a flush
		// here would cost the event and the last chunk a write each.
		hd.Set("Transfer-Encoding", "chunked")
		_, _ = w.Write(buf.Bytes())
		return
	}
	_, _ = w.Write(buf.Bytes())
	_ = http.NewResponseController(w).Flush()
}

// encodeFastResponse is the SDK's encoding of the response to fc
// (jsonrpc.EncodeMessage) and the HTTP status a 2026-07-28 error gets (0:
// none, answered in the stream).
func (m *Server) encodeFastResponse(fc *fastCall, res mcp.Result, err error) ([]byte, int) {
	resp := &jsonrpc.Response{ID: fc.id}
	if err != nil {
		resp.Error = err
	} else {
		raw, merr := encodeResult(res)
		if merr != nil {
			// The SDK would log this and never answer; answer instead.
			m.log.Error("MCP tools/call: result not encodable", "error", merr)
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		} else {
			resp.Result = raw
		}
	}
	data, eerr := jsonrpc.EncodeMessage(resp)
	if eerr != nil {
		m.log.Error("MCP tools/call: response not encodable", "error", eerr)
		data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: fc.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}})
	}
	return data, sep2575Status(fc.newProtocol, resp.Error)
}

// appendResultMessage appends the JSON-RPC response carrying res to id as
// jsonrpc.EncodeMessage writes it — {"jsonrpc":"2.0","id":…,"result":…},
// the result as encodeResult writes it, which the SDK's compaction of a
// raw result leaves as it is — encoding the result once, into b. False,
// with b as it was, when it cannot say so for certain (an id string that
// would need escaping, a result that does not encode): the caller
// encodes the SDK's way. TestAppendResultMessageMatchesSDK holds the two
// equal.
func appendResultMessage(b *bytes.Buffer, id jsonrpc.ID, res mcp.Result) bool {
	n := b.Len()
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	switch v := id.Raw().(type) {
	case int64:
		b.Write(strconv.AppendInt(b.AvailableBuffer(), v, 10))
	case string:
		if !plainJSONString(v) {
			b.Truncate(n)
			return false
		}
		b.WriteByte('"')
		b.WriteString(v)
		b.WriteByte('"')
	default:
		b.Truncate(n)
		return false
	}
	b.WriteString(`,"result":`)
	if cr, ok := res.(*callResult); ok && appendCallResult(b, cr) {
		b.WriteByte('}')
		return true
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if res == nil || enc.Encode(res) != nil { // Encode writes nothing when it fails
		b.Truncate(n)
		return false
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	b.WriteByte('}')
	return true
}

// plainJSONString: s is printable ASCII without a quote or backslash, so
// its JSON string is s between quotes (HTML left unescaped, as the SDK
// writes it).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// setStreamHeaders are the SDK's headers of a response stream.
func setStreamHeaders(hd http.Header) {
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Connection", "keep-alive")
}

// sep2575Status is the HTTP status the SDK gives a 2026-07-28 JSON-RPC
// error (extractErrorStatus), or 0: answered in the stream.
func sep2575Status(newProtocol bool, err error) int {
	var je *jsonrpc.Error
	if !newProtocol || err == nil || !errors.As(err, &je) {
		return 0
	}
	switch je.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, codeUnsupportedProtocolVersion, codeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// annotateServerInfo names the server in a 2026-07-28 result's _meta unless
// it already says, as the SDK's session does (annotateServerInfo).
func annotateServerInfo(res mcp.Result, impl *mcp.Implementation) {
	if res == nil || impl == nil {
		return
	}
	meta := res.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	if _, ok := meta[mcp.MetaKeyServerInfo]; ok {
		return
	}
	meta[mcp.MetaKeyServerInfo] = impl
	res.SetMeta(meta)
}

// encodeResult is a result's JSON as the SDK's jsonrpc2 writes it (HTML
// left unescaped, no trailing newline).
func encodeResult(res mcp.Result) (json.RawMessage, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

// putBuffer returns b to the pool unless it grew large (one big body must
// not stay resident).
func putBuffer(b *bytes.Buffer) {
	if b.Cap() > fastPathBufferLimit {
		return
	}
	b.Reset()
	bufferPool.Put(b)
}
