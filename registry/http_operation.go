package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// HTTPOperation is one operation of an HTTP API (typically from an OpenAPI
// document): the tool's arguments are mapped onto its path, query, headers
// and JSON body, its JSON response is the tool's result. It holds all a
// call needs, so calls never re-read the document.
type HTTPOperation struct {
	// BaseURL is "http://" or "https://" host[:port][/prefix], without
	// query, fragment or credentials.
	BaseURL string
	// Method is the HTTP method in upper case.
	Method string
	// Path is the path template after BaseURL, e.g. "/pets/{petId}".
	Path string
	// Parameters say where each argument goes.
	Parameters []HTTPParameter
	// BodyArgument, when set, is the argument whose value is the whole JSON
	// body; then no parameter is in HTTPInBody.
	BodyArgument string
	// ResponseSchema is the 2xx JSON response's schema, when declared
	// (documentation only).
	ResponseSchema *structpb.Struct
}

// HTTPParameter is where one argument goes: Name is its name as an
// argument and on the wire.
type HTTPParameter struct {
	Name string
	In   HTTPIn
}

// HTTPIn is a part of an HTTP request.
type HTTPIn int

// The parts of a request an argument can go to (the proto enum's numbers).
const (
	HTTPInUnspecified HTTPIn = iota
	HTTPInPath
	HTTPInQuery
	HTTPInHeader
	HTTPInBody
)

func (in HTTPIn) String() string {
	switch in {
	case HTTPInPath:
		return "path"
	case HTTPInQuery:
		return "query"
	case HTTPInHeader:
		return "header"
	case HTTPInBody:
		return "body"
	}
	return fmt.Sprintf("unspecified(%d)", int(in))
}

// ParseHTTPIn is the part named by String ("path", "query", "header",
// "body").
func ParseHTTPIn(name string) (HTTPIn, bool) {
	for in := HTTPInPath; in <= HTTPInBody; in++ {
		if in.String() == name {
			return in, true
		}
	}
	return HTTPInUnspecified, false
}

// httpMethods are the methods an operation may use (OpenAPI's, less TRACE).
// (No net/http here: the registry stays free of it, TestImports.)
var httpMethods = map[string]bool{"GET": true, "PUT": true, "POST": true,
	"DELETE": true, "OPTIONS": true, "HEAD": true, "PATCH": true}

// refusedHeaders may not be set from arguments: hop-by-hop headers and
// framing belong to the transport, Host to the base URL.
var refusedHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Upgrade": true, "Host": true, "Content-Length": true, "Content-Type": true}

// headerToken is RFC 9110's token, a header name.
var headerToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// pathPlaceholder is a {name} in a path template.
var pathPlaceholder = regexp.MustCompile(`\{([^{}/]*)\}`)

// HTTPHeaderRefused says why an argument may not set header name ("" when
// it may): the gateway's own X-Flowdrop-* headers carry the call id and
// the caller, which an argument must not forge.
func HTTPHeaderRefused(name string) string {
	canon := textproto.CanonicalMIMEHeaderKey(name)
	switch {
	case !headerToken.MatchString(name):
		return fmt.Sprintf("header %q is not a valid header name", name)
	case refusedHeaders[canon]:
		return fmt.Sprintf("header %q is set by the gateway's HTTP client, not from arguments", canon)
	case strings.HasPrefix(canon, "X-Flowdrop-"):
		return fmt.Sprintf("header %q is the gateway's own (X-Flowdrop-*)", canon)
	}
	return ""
}

// PathPlaceholders are the {name}s of a path template, in order.
func PathPlaceholders(path string) []string {
	var out []string
	for _, m := range pathPlaceholder.FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkHTTPOperation admits an HTTP operation: an http(s) base URL, a
// known method, a path template whose placeholders are all mapped, and
// parameters each named once.
func checkHTTPOperation(tool string, op *HTTPOperation) *ToolError {
	bad := func(field, reason string) *ToolError {
		return &ToolError{Tool: tool, Field: "spec.http_operation." + field, Reason: reason}
	}
	if r := ValidateBaseURL(op.BaseURL); r != "" {
		return bad("base_url", r)
	}
	if !httpMethods[op.Method] {
		return bad("method", fmt.Sprintf("%q is not one of GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH", op.Method))
	}
	if !strings.HasPrefix(op.Path, "/") || strings.ContainsAny(op.Path, "?# \t\r\n") {
		return bad("path", fmt.Sprintf("%q must start with / and hold no query, fragment or whitespace", op.Path))
	}
	if strings.Count(op.Path, "{") != len(PathPlaceholders(op.Path)) || strings.Count(op.Path, "}") != len(PathPlaceholders(op.Path)) {
		return bad("path", fmt.Sprintf("%q has an unbalanced or nested {placeholder}", op.Path))
	}
	seen := map[string]HTTPIn{}
	hasBody := false
	for i, p := range op.Parameters {
		field := fmt.Sprintf("parameters[%d]", i)
		switch {
		case p.Name == "":
			return bad(field+".name", "must not be empty")
		case p.In < HTTPInPath || p.In > HTTPInBody:
			return bad(field+".in", "must be path, query, header or body")
		}
		if _, dup := seen[p.Name]; dup {
			return bad(field+".name", fmt.Sprintf("%q is mapped twice", p.Name))
		}
		seen[p.Name] = p.In
		switch p.In {
		case HTTPInHeader:
			if r := HTTPHeaderRefused(p.Name); r != "" {
				return bad(field+".name", r)
			}
		case HTTPInBody:
			hasBody = true
		}
	}
	for _, name := range PathPlaceholders(op.Path) {
		if seen[name] != HTTPInPath {
			return bad("parameters", fmt.Sprintf("path placeholder {%s} has no path parameter", name))
		}
	}
	for i, p := range op.Parameters {
		if p.In == HTTPInPath && !strings.Contains(op.Path, "{"+p.Name+"}") {
			return bad(fmt.Sprintf("parameters[%d].name", i), fmt.Sprintf("path parameter %q is not in the path %q", p.Name, op.Path))
		}
	}
	if op.BodyArgument != "" {
		if hasBody {
			return bad("body_argument", "must be empty when a parameter is in body: the body is either one argument or an object of body parameters")
		}
		if _, dup := seen[op.BodyArgument]; dup {
			return bad("body_argument", fmt.Sprintf("%q is also a parameter", op.BodyArgument))
		}
	}
	return nil
}

// ValidateBaseURL says why u is not an admissible base URL ("" when it is).
// The reason never quotes the URL: a refusal may reach a caller.
func ValidateBaseURL(u string) string {
	if u == "" {
		return "is required: http:// or https:// host[:port][/prefix]"
	}
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return "does not parse as a URL"
	case p.Scheme != "http" && p.Scheme != "https":
		return "must be an http:// or https:// URL"
	case p.Host == "" || p.Opaque != "":
		return "must name a host"
	case p.User != nil:
		return "must not carry credentials (user:password@): set them as a declared header"
	case p.RawQuery != "" || p.ForceQuery || p.Fragment != "":
		return "must not have a query or fragment"
	}
	return ""
}

func sameHTTPOperation(a, b *HTTPOperation) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.BaseURL != b.BaseURL || a.Method != b.Method || a.Path != b.Path || a.BodyArgument != b.BodyArgument ||
		len(a.Parameters) != len(b.Parameters) || !proto.Equal(a.ResponseSchema, b.ResponseSchema) {
		return false
	}
	for i := range a.Parameters {
		if a.Parameters[i] != b.Parameters[i] {
			return false
		}
	}
	return true
}

// httpOperationKind is the HTTP-operation kind (spec.http_operation).
type httpOperationKind struct{}

func (httpOperationKind) name() string { return "http_operation" }
func (httpOperationKind) title(t *Tool) string {
	return "HTTP " + t.Spec.HTTPOperation.Method + " " + t.Spec.HTTPOperation.Path
}
func (httpOperationKind) target(t *Tool) string { return t.Spec.HTTPOperation.BaseURL }

// operatorTarget is the base URL whole: admission refuses one with
// credentials, a query or a fragment.
func (httpOperationKind) operatorTarget(t *Tool) string { return t.Spec.HTTPOperation.BaseURL }
func (httpOperationKind) line(t *Tool) string {
	op := t.Spec.HTTPOperation
	return op.Method + " " + op.BaseURL + op.Path
}

func (httpOperationKind) check(t *Tool) (protoreflect.MethodDescriptor, *ToolError) {
	if te := checkHTTPOperation(t.Name, t.Spec.HTTPOperation); te != nil {
		return nil, te
	}
	return nil, nil
}

func (httpOperationKind) equal(a, b *BackendSpec) bool {
	return sameHTTPOperation(a.HTTPOperation, b.HTTPOperation)
}

func (httpOperationKind) hideAddress(s *BackendSpec) {
	op := *s.HTTPOperation
	op.BaseURL = ""
	s.HTTPOperation = &op
}

// httpOperationForm is the stored form and the tools file's (read
// strictly there):
//
//	http_operation:
//	  base_url: https://pets.internal
//	  method: GET
//	  path: /pets/{petId}
//	  parameters: [{name: petId, in: path}, {name: verbose, in: query}]
//
// A parameter's in is the part's name (HTTPIn.String), not its number: the
// forms read on their own; the response schema is raw protojson.
type httpOperationForm struct {
	BaseURL        string              `json:"base_url"`
	Method         string              `json:"method"`
	Path           string              `json:"path"`
	Parameters     []httpParameterForm `json:"parameters,omitempty"`
	BodyArgument   string              `json:"body_argument,omitempty"`
	ResponseSchema json.RawMessage     `json:"response_schema,omitempty"`
}

type httpParameterForm struct {
	Name string `json:"name"`
	In   string `json:"in"` // path, query, header or body
}

func (httpOperationKind) record(s *BackendSpec) (any, error) {
	h := s.HTTPOperation
	hr := &httpOperationForm{BaseURL: h.BaseURL, Method: h.Method, Path: h.Path, BodyArgument: h.BodyArgument}
	for _, p := range h.Parameters {
		hr.Parameters = append(hr.Parameters, httpParameterForm{Name: p.Name, In: p.In.String()})
	}
	if h.ResponseSchema != nil {
		raw, err := compactProtoJSON(h.ResponseSchema)
		if err != nil {
			return nil, fmt.Errorf("encode spec.http_operation.response_schema: %w", err)
		}
		hr.ResponseSchema = raw
	}
	return hr, nil
}

func (httpOperationKind) fromRecord(raw json.RawMessage, s *BackendSpec) error {
	var hr httpOperationForm
	if err := json.Unmarshal(raw, &hr); err != nil {
		return err
	}
	op := &HTTPOperation{BaseURL: hr.BaseURL, Method: hr.Method, Path: hr.Path, BodyArgument: hr.BodyArgument}
	for i, p := range hr.Parameters {
		in, ok := ParseHTTPIn(p.In)
		if !ok {
			return fmt.Errorf("parameters[%d].in: unknown part %q", i, p.In)
		}
		op.Parameters = append(op.Parameters, HTTPParameter{Name: p.Name, In: in})
	}
	if len(hr.ResponseSchema) > 0 && !bytes.Equal(hr.ResponseSchema, []byte("null")) {
		rs := &structpb.Struct{}
		if err := protojson.Unmarshal(hr.ResponseSchema, rs); err != nil {
			return fmt.Errorf("response_schema: %w", err)
		}
		op.ResponseSchema = rs
	}
	s.HTTPOperation = op
	return nil
}

func (httpOperationKind) fromFile(raw json.RawMessage, s *BackendSpec) (string, error) {
	var h httpOperationForm
	if err := decodeStrict(raw, &h); err != nil {
		return "", err
	}
	op := &HTTPOperation{BaseURL: h.BaseURL, Method: h.Method, Path: h.Path, BodyArgument: h.BodyArgument}
	for i, p := range h.Parameters {
		in, ok := ParseHTTPIn(p.In)
		if !ok {
			return fmt.Sprintf("spec.http_operation.parameters[%d].in %q: must be path, query, header or body", i, p.In), nil
		}
		op.Parameters = append(op.Parameters, HTTPParameter{Name: p.Name, In: in})
	}
	if len(h.ResponseSchema) > 0 && string(h.ResponseSchema) != "null" {
		var rs structpb.Struct
		if err := protojson.Unmarshal(h.ResponseSchema, &rs); err != nil {
			return fmt.Sprintf("spec.http_operation.response_schema must be an object: %v", err), nil
		}
		op.ResponseSchema = &rs
	}
	s.HTTPOperation = op
	return "", nil
}

// compactProtoJSON is m as compact protojson: protojson output has
// deliberately unstable whitespace, compacted so equal tools encode to
// equal bytes.
func compactProtoJSON(m proto.Message) (json.RawMessage, error) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
