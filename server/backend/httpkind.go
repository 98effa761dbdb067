package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/schema"
	"github.com/flowdrop/gateway/server/pipeline"
)

// HTTP headers the gateway sets on HTTP operation calls, as MDCallID and
// MDCaller on gRPC ones.
const (
	HeaderCallID = "X-Flowdrop-Call-Id"
	HeaderCaller = "X-Flowdrop-Caller"
)

// httpErrorPrefix bounds how much of a 4xx body a tool error quotes.
const httpErrorPrefix = 512

// HTTPOperation is the backend kind of a tool whose spec is an operation
// of an HTTP API: arguments go to the path (escaped), the query, declared
// headers and a JSON body as the spec maps them; a 2xx JSON response is
// the result (other 2xx text a string result), a 4xx a tool error quoting
// the status and a bounded prefix of the body, a 3xx FailedPrecondition
// and a 5xx or a failed connection Unavailable naming the tool, never the
// URL.
//
// One keep-alive connection pool for every HTTP tool; the deadline budget,
// the send and receive limits and the failure classification are the
// ToolBackendService kind's. No redirect is followed: one re-sends the
// call's arguments and headers (and presents the tool's client
// certificate) wherever the backend points, and even within its host it
// leaves the operation's path (a dot segment's 301). No proxy from the
// environment.
type HTTPOperation struct {
	ts        *ToolService
	transport *http.Transport
	client    *http.Client
	// tlsClients holds a client per distinct spec.tls setting
	// (registry.TransportSecurity → *http.Client), built on first use.
	tlsClients sync.Map
}

// NewHTTPOperation is the kind with ts's budget and limits; Close releases
// its idle connections.
func NewHTTPOperation(ts *ToolService) *HTTPOperation {
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	client := &http.Client{Transport: tr, CheckRedirect: noRedirects}
	return &HTTPOperation{ts: ts, transport: tr, client: client}
}

// noRedirects hands a redirect back as the response (result answers it).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close closes the idle connections (calls may still open new ones).
func (h *HTTPOperation) Close() {
	h.transport.CloseIdleConnections()
	h.tlsClients.Range(func(_, c any) bool {
		c.(*http.Client).Transport.(*http.Transport).CloseIdleConnections()
		return true
	})
}

// errPlaintextRefused: the tool requires TLS (spec.tls) but its base URL is
// http; the gateway never falls back to plaintext.
var errPlaintextRefused = errors.New("the tool requires TLS but its base URL is http")

// clientFor is the client for the tool's transport security: the shared
// one without spec.tls; with it, one per distinct setting (its CA, client
// certificate, server name), and never a plaintext request.
func (h *HTTPOperation) clientFor(op *registry.HTTPOperation, ts *registry.TransportSecurity) (*http.Client, error) {
	if ts == nil {
		return h.client, nil
	}
	if strings.HasPrefix(strings.ToLower(op.BaseURL), "http://") {
		return nil, errPlaintextRefused
	}
	if c, ok := h.tlsClients.Load(*ts); ok {
		return c.(*http.Client), nil
	}
	cfg, err := TLSConfig(*ts)
	if err != nil {
		return nil, err
	}
	tr := h.transport.Clone()
	tr.TLSClientConfig = cfg
	c := &http.Client{Transport: tr, CheckRedirect: noRedirects}
	actual, _ := h.tlsClients.LoadOrStore(*ts, c)
	return actual.(*http.Client), nil
}

// Invoke calls the tool's operation.
func (h *HTTPOperation) Invoke(ctx context.Context, c *pipeline.Call) (pipeline.Result, error) {
	spec := c.Entry.Tool.Spec
	if spec == nil || spec.HTTPOperation == nil {
		return pipeline.Result{}, fmt.Errorf("tool %q has no HTTP operation", c.Tool) // Internal: dispatch's mistake
	}
	op := spec.HTTPOperation
	args, err := c.Args()
	if err != nil {
		return pipeline.Result{}, err
	}
	ctx, cancel, budget, source := h.ts.budgetContext(ctx, c)
	defer cancel()
	req, err := h.request(ctx, c, op, args)
	if err != nil {
		return pipeline.Result{}, err
	}
	client, err := h.clientFor(op, spec.TLS)
	if err != nil {
		return pipeline.Result{}, h.ts.failure(c, budget, source, status.Error(codes.Unavailable, err.Error()))
	}
	resp, err := client.Do(req)
	if err != nil {
		return pipeline.Result{}, h.transportFailure(c, budget, source, err)
	}
	defer resp.Body.Close()
	limit := h.ts.cfg.MaxRecvMsgSize
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return pipeline.Result{}, h.transportFailure(c, budget, source, err)
	}
	if len(body) > limit {
		return pipeline.Result{}, h.ts.responseTooLarge(c)
	}
	return h.result(c, resp, body)
}

// transportFailure classifies a request that got no response: the
// deadline, cancellation, or an unreachable backend.
func (h *HTTPOperation) transportFailure(c *pipeline.Call, budget time.Duration, source string, err error) *pipeline.Error {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return h.ts.failure(c, budget, source, err)
	}
	// Cause keeps the transport's error (which names the URL) for the logs.
	e := h.ts.failure(c, budget, source, status.Error(codes.Unavailable, "HTTP backend unreachable"))
	e.Cause = err
	return e
}

// result reads the response: 2xx the result, 4xx a tool error, anything
// else the backend's failure — a redirect (not followed) FailedPrecondition,
// which a retry does not change; its Location is not passed on.
func (h *HTTPOperation) result(c *pipeline.Call, resp *http.Response, body []byte) (pipeline.Result, error) {
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		v, err := responseValue(resp.Header.Get("Content-Type"), body)
		if err != nil {
			return pipeline.Result{}, h.ts.failure(c, 0, "", status.Errorf(codes.Internal, "tool %q: the backend's response %v", c.Tool, err))
		}
		return pipeline.Result{Value: v}, nil
	case code >= 400 && code < 500:
		text := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
		if p := textPrefix(body, httpErrorPrefix); p != "" {
			text += ": " + p
		}
		return pipeline.Result{Value: structpb.NewStringValue(text), IsError: true}, nil
	case code >= 300 && code < 400:
		// Where it pointed is for the operator's log (Cause), bounded.
		loc := textPrefix([]byte(resp.Header.Get("Location")), 256)
		return pipeline.Result{}, &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonBackendError, Tool: c.Tool,
			Message: fmt.Sprintf("tool %q: the backend answered with a redirect (HTTP %d), which the gateway does not follow", c.Tool, code),
			Cause:   fmt.Errorf("HTTP %d redirect to %q", code, loc)}
	default:
		e := h.ts.failure(c, 0, "", status.Errorf(codes.Unavailable, "HTTP %d", code))
		if code < 500 { // 1xx: not a retryable outage but a backend that does not answer
			e.Code, e.Reason = pipeline.Unavailable, pipeline.ReasonBackendError
			e.Message = fmt.Sprintf("tool %q: the backend answered HTTP %d, not a result", c.Tool, code)
		}
		return pipeline.Result{}, e
	}
}

// responseValue is a 2xx body as a Value: JSON when it is JSON (by its
// content type, or without one when it parses), else a string (empty:
// null).
func responseValue(contentType string, body []byte) (*structpb.Value, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return structpb.NewNullValue(), nil
	}
	jsonType := false
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		jsonType = mt == "application/json" || strings.HasSuffix(mt, "+json")
	}
	if jsonType || contentType == "" {
		v := new(structpb.Value)
		err := protojson.Unmarshal(body, v)
		if err == nil {
			return v, nil
		}
		if jsonType {
			return nil, errors.New("is declared JSON and does not parse")
		}
	}
	if !utf8.Valid(body) {
		return nil, errors.New("is neither JSON nor UTF-8 text")
	}
	return structpb.NewStringValue(string(body)), nil
}

// textPrefix is at most n bytes of b, cut at a rune boundary, invalid
// UTF-8 replaced, spaces trimmed.
func textPrefix(b []byte, n int) string {
	cut := len(b) > n
	if cut {
		b = b[:n]
		for len(b) > 0 && !utf8.Valid(b) && len(b) > n-utf8.UTFMax {
			b = b[:len(b)-1]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if cut && s != "" {
		s += "…"
	}
	return s
}

// request builds the HTTP request from the arguments as op maps them.
func (h *HTTPOperation) request(ctx context.Context, c *pipeline.Call, op *registry.HTTPOperation, args *structpb.Struct) (*http.Request, error) {
	fields := args.GetFields()
	used := 0
	path := op.Path
	query := url.Values{}
	header := http.Header{}
	var bodyObj map[string]*structpb.Value
	for _, p := range op.Parameters {
		v, ok := fields[p.Name]
		if !ok {
			if p.In == registry.HTTPInPath {
				return nil, argumentRefusal(c.Tool, p.Name, "is required: it is a path parameter")
			}
			continue
		}
		used++
		switch p.In {
		case registry.HTTPInPath:
			s, ok := scalarText(v)
			if !ok {
				return nil, argumentRefusal(c.Tool, p.Name, "must be a string, number or boolean: it is a path parameter")
			}
			// Escaping keeps "/" (and "%") inside the segment, but "", "."
			// and ".." stay as they are: a dot segment, which the URL's
			// resolution (the backend's, or its redirect's) removes with
			// the segment before it, or an empty one — either reaches
			// another path than the operation's.
			if s == "" || s == "." || s == ".." {
				return nil, argumentRefusal(c.Tool, p.Name, `must not be empty, "." or "..": it is a path parameter`)
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(s))
		case registry.HTTPInQuery:
			vals, ok := listText(v)
			if !ok {
				return nil, argumentRefusal(c.Tool, p.Name, "must be a string, number, boolean or an array of them: it is a query parameter")
			}
			query[p.Name] = vals
		case registry.HTTPInHeader:
			vals, ok := listText(v)
			if !ok {
				return nil, argumentRefusal(c.Tool, p.Name, "must be a string, number, boolean or an array of them: it is a header")
			}
			for _, s := range vals {
				// The transport's own test: what it would refuse (as an
				// unreachable backend) is the caller's argument to fix.
				if !httpguts.ValidHeaderFieldValue(s) {
					return nil, argumentRefusal(c.Tool, p.Name, "must not hold a line break or other control character: it is a header")
				}
			}
			header.Set(p.Name, strings.Join(vals, ", "))
		case registry.HTTPInBody:
			if bodyObj == nil {
				bodyObj = map[string]*structpb.Value{}
			}
			bodyObj[p.Name] = v
		}
	}
	var body []byte
	if op.BodyArgument != "" {
		if v, ok := fields[op.BodyArgument]; ok {
			used++
			b, err := protojson.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("tool %q: encoding the body: %w", c.Tool, err)
			}
			body = b
		}
	} else if bodyObj != nil {
		b, err := protojson.Marshal(&structpb.Struct{Fields: bodyObj})
		if err != nil {
			return nil, fmt.Errorf("tool %q: encoding the body: %w", c.Tool, err)
		}
		body = b
	}
	if used != len(fields) {
		for name := range fields {
			if !mapped(op, name) {
				return nil, argumentRefusal(c.Tool, name, "is not a parameter of the tool's HTTP operation")
			}
		}
	}
	if err := h.ts.checkSendSize(c, len(body)); err != nil {
		return nil, err
	}
	target := strings.TrimSuffix(op.BaseURL, "/") + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, op.Method, target, rd)
	if err != nil {
		// The base URL was admitted: the path's arguments made it unparsable.
		return nil, argumentRefusal(c.Tool, "", "the path arguments do not make a valid URL")
	}
	req.Header = header
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.CallID != "" {
		req.Header.Set(HeaderCallID, c.CallID)
	}
	if c.Caller.Subject != "" {
		req.Header.Set(HeaderCaller, c.Caller.Subject)
	}
	if v, ok := bearer(ctx); ok {
		req.Header.Set("Authorization", v) // after the arguments' headers: the policy's identity wins
	}
	for _, k := range append(propagatedMD[1:], traceMD...) { // not grpc-trace-bin: binary, gRPC's own
		if v := metadata.ValueFromIncomingContext(ctx, k); len(v) > 0 {
			req.Header.Set(k, v[0])
		}
	}
	return req, nil
}

func mapped(op *registry.HTTPOperation, name string) bool {
	if name == op.BodyArgument {
		return true
	}
	for _, p := range op.Parameters {
		if p.Name == name {
			return true
		}
	}
	return false
}

// argumentRefusal is InvalidArgument naming the argument, never its value.
func argumentRefusal(tool, arg, reason string) *pipeline.Error {
	msg := reason
	if arg != "" {
		msg = fmt.Sprintf("argument %q %s", arg, reason)
	}
	return &pipeline.Error{Code: pipeline.InvalidArgument, Kind: pipeline.KindValidation, Reason: pipeline.ReasonArgumentsInvalid,
		Tool: tool, Message: fmt.Sprintf("tool %q: %s", tool, msg), Violations: []schema.Violation{{Message: msg}}}
}

// scalarText is a string, number or boolean as it goes on the wire.
func scalarText(v *structpb.Value) (string, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return k.StringValue, true
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(k.BoolValue), true
	case *structpb.Value_NumberValue:
		return strconv.FormatFloat(k.NumberValue, 'f', -1, 64), true
	}
	return "", false
}

// listText is a scalar, or an array of scalars, as wire strings.
func listText(v *structpb.Value) ([]string, bool) {
	if l := v.GetListValue(); l != nil {
		out := make([]string, 0, len(l.GetValues()))
		for _, e := range l.GetValues() {
			s, ok := scalarText(e)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	s, ok := scalarText(v)
	return []string{s}, ok
}
