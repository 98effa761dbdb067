package registry

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The kinds' registry: the one place that knows the list of backend kinds.
// Everything else asks it (KindOf, Kinds, the functions below) and fails
// closed on an unknown kind (UnknownKindError), as Envoy AI Gateway's
// translator.GetTranslator does for API schemas.
//
// A new kind NAME touches, besides its own files (registry/NAME.go: its
// type, admission, target, titles, stored and file forms;
// server/backend/NAME.go: its adapter; a test beside each), exactly four
// hand-written files (internal/archtest's
// TestOnlyTheKindsRegistryKnowsTheKinds refuses a choice between kinds
// anywhere else):
//
//  1. registry/kinds.go: a BackendSpec field, a Kind constant, a row of
//     backendKinds and a line of KindOf's switch;
//  2. proto/flowdrop/gateway/v1/tool.proto: a member of BackendSpec's kind
//     oneof, named NAME (./generate regenerates gen/);
//  3. internal/toolproto/kinds.go: the oneof member ↔ the registry's type;
//  4. server/backend/kinds.go: the kind's adapter in newAdapter.
//
// and, on purpose, one test row: registry's TestEveryKindRoundTrips fails
// until kinds_test.go has an example of the kind (toolproto's and
// backend's kind tests and the archtest derive theirs from this list).

// BackendSpec is a typed backend, for a service that does not implement
// ToolBackendService. Exactly one kind is set.
type BackendSpec struct {
	GRPCMethod    *GRPCMethod    // grpc_method.go
	HTTPOperation *HTTPOperation // http_operation.go
	MCPTool       *MCPTool       // mcp_tool.go
	Alias         *Alias         // alias.go
	// TLS is transport security to the backend, whatever the kind
	// (transport_security.go); nil: the gateway's per-target settings.
	TLS *TransportSecurity
}

// Kind is a backend kind. The zero Kind is none.
type Kind uint8

// The backend kinds, in the order Kinds lists them.
const (
	KindToolBackendService Kind = iota + 1 // Tool.Backend (backend.go)
	KindGRPCMethod                         // grpc_method.go
	KindHTTPOperation                      // http_operation.go
	KindMCPTool                            // mcp_tool.go
	KindAlias                              // alias.go
)

// backendKinds are the kinds, by Kind: each kind's behaviour behind one
// interface.
var backendKinds = [...]backendKind{
	KindToolBackendService: toolBackendServiceKind{},
	KindGRPCMethod:         grpcMethodKind{},
	KindHTTPOperation:      httpOperationKind{},
	KindMCPTool:            mcpToolKind{},
	KindAlias:              aliasKind{},
}

// KindOf is the kind of t's backend: KindToolBackendService without a
// spec, else the one kind its spec sets. A spec that sets none or several
// is an *UnknownKindError: refused, never guessed.
func KindOf(t *Tool) (Kind, error) {
	s := t.Spec
	if s == nil {
		return KindToolBackendService, nil
	}
	k, n := Kind(0), 0
	if s.GRPCMethod != nil {
		k, n = KindGRPCMethod, n+1
	}
	if s.HTTPOperation != nil {
		k, n = KindHTTPOperation, n+1
	}
	if s.MCPTool != nil {
		k, n = KindMCPTool, n+1
	}
	if s.Alias != nil {
		k, n = KindAlias, n+1
	}
	switch n {
	case 1:
		return k, nil
	case 0:
		return 0, &UnknownKindError{Tool: t.Name, Reason: "names no backend kind: set " + specKindList("or")}
	}
	return 0, &UnknownKindError{Tool: t.Name, Reason: "names two backend kinds: set exactly one of " + specKindList("and")}
}

// backendKind is what the registry knows of one kind.
type backendKind interface {
	// name is the kind's name: its field under spec in the tools file,
	// the stored record and the contract's BackendSpec oneof ("" for
	// ToolBackendService, which has no spec).
	name() string
	// title is how the status page names the kind of t, without its
	// address (e.g. "HTTP GET /pets/{id}").
	title(t *Tool) string
	// target is where t's calls go (Tool.Target).
	target(t *Tool) string
	// operatorTarget is the target as the admin status page and
	// flowdropctl show it to operators: never a credential or a path on
	// the gateway's host.
	operatorTarget(t *Tool) string
	// line is t's backend on one line for flowdropctl's listings (an
	// admin's: the target whole, with what is called there).
	line(t *Tool) string
	// check admits t's kind (the spec's TLS is checked already); a gRPC
	// method resolves to its descriptor.
	check(t *Tool) (protoreflect.MethodDescriptor, *ToolError)
	// equal reports whether a and b (of this kind) call the same thing.
	equal(a, b *BackendSpec) bool
	// hideAddress clears, in s (a copy), what only those who see
	// backends may read: targets and credential references.
	hideAddress(s *BackendSpec)
	// record is the kind's stored form (toolcodec); fromRecord reads it
	// into s.
	record(s *BackendSpec) (any, error)
	fromRecord(raw json.RawMessage, s *BackendSpec) error
	// fromFile reads the kind's tools-file form (decoded strictly) into
	// s, or says why it cannot (naming the field).
	fromFile(raw json.RawMessage, s *BackendSpec) (reason string, err error)
}

// Kinds lists every backend kind.
func Kinds() []Kind {
	out := make([]Kind, 0, len(backendKinds)-1)
	for k := range backendKinds {
		if k != 0 {
			out = append(out, Kind(k))
		}
	}
	return out
}

// String is the kind's name under spec ("grpc_method", …), or
// "tool_backend_service".
func (k Kind) String() string {
	if !k.known() {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	if n := backendKinds[k].name(); n != "" {
		return n
	}
	return "tool_backend_service"
}

func (k Kind) known() bool { return k > 0 && int(k) < len(backendKinds) }

// SpecKind is the kind named name under spec; false for any other name.
func SpecKind(name string) (Kind, bool) {
	for k, bk := range backendKinds {
		if k != 0 && bk.name() != "" && bk.name() == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// specKindList is the spec's kind names joined with conj: "a, b or c".
func specKindList(conj string) string {
	var names []string
	for _, k := range Kinds() {
		if n := backendKinds[k].name(); n != "" {
			names = append(names, n)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// UnknownKindError is a backend kind this build does not know, or a spec
// naming no kind or several: refused wherever it is read.
type UnknownKindError struct {
	Tool string // "" when not known where it is read
	// Name is the unknown kind's name as written ("" when the spec names
	// none or several).
	Name   string
	Reason string
}

func (e *UnknownKindError) Error() string {
	var b strings.Builder
	if e.Tool != "" {
		fmt.Fprintf(&b, "tool %q: ", e.Tool)
	}
	if e.Name != "" {
		fmt.Fprintf(&b, "unknown backend kind %q: %s", e.Name, e.Reason)
	} else {
		b.WriteString("spec " + e.Reason)
	}
	return b.String()
}

func unknownKind(name string) *UnknownKindError {
	return &UnknownKindError{Name: name, Reason: "this build knows " + specKindList("and")}
}

// Target is where the tool's calls go, whatever its kind: the gRPC dial
// target (ToolBackendService, a gRPC method), the HTTP operation's base URL,
// or the upstream MCP server's URL (stdio://NAME for a stdio server). For
// the operator's log lines and the backend pools, never for a caller; ""
// for a tool of no known kind.
func (t Tool) Target() string {
	k, err := KindOf(&t)
	if err != nil {
		return ""
	}
	return backendKinds[k].target(&t)
}

// OperatorView is the tool's kind and target as an operator sees them
// (the admin status page, flowdropctl): the kind's title (what is called
// there, e.g. "gRPC method /notes.v1.Notes/Create") and the target without
// a query, credential or host path. Never for a caller.
func OperatorView(t *Tool) (title, target string) {
	k, err := KindOf(t)
	if err != nil {
		return "unknown backend kind", ""
	}
	return backendKinds[k].title(t), backendKinds[k].operatorTarget(t)
}

// BackendLine is t's backend on one line, as flowdropctl lists it for an
// admin: the target whole and what is called there.
func BackendLine(t *Tool) string {
	k, err := KindOf(t)
	if err != nil {
		return "unknown backend kind"
	}
	return backendKinds[k].line(t)
}

// WithoutAddresses is a copy of s holding nothing only those who see
// backends may read: no target, no credential reference, no TLS file path
// (that TLS is required stays). The kind's own values are shared.
func (s *BackendSpec) WithoutAddresses() *BackendSpec {
	if s == nil {
		return nil
	}
	c := *s
	if c.TLS != nil {
		c.TLS = &TransportSecurity{Require: true}
	}
	if k, err := KindOf(&Tool{Spec: &c}); err == nil {
		backendKinds[k].hideAddress(&c)
	}
	return &c
}

func sameSpec(a, b *BackendSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !sameTLS(a.TLS, b.TLS) {
		return false
	}
	ka, errA := KindOf(&Tool{Spec: a})
	kb, errB := KindOf(&Tool{Spec: b})
	if errA != nil || errB != nil {
		// Neither is admissible; equal only when they name nothing.
		return ka == kb && errA != nil && errB != nil && *a == *b
	}
	return ka == kb && backendKinds[ka].equal(a, b)
}

// EncodeSpecKind is the stored form of s's kind: its name and the value
// to encode under it; "" and nil when s names no kind (an inadmissible
// spec the store never holds), an *UnknownKindError when it names several.
func EncodeSpecKind(s *BackendSpec) (string, any, error) {
	k, err := KindOf(&Tool{Spec: s})
	if err != nil {
		if s.GRPCMethod == nil && s.HTTPOperation == nil && s.MCPTool == nil && s.Alias == nil {
			return "", nil, nil
		}
		return "", nil, err
	}
	v, err := backendKinds[k].record(s)
	return backendKinds[k].name(), v, err
}

// DecodeSpecKind reads the stored form of kind name into s; an unknown
// name is an *UnknownKindError.
func DecodeSpecKind(name string, raw json.RawMessage, s *BackendSpec) error {
	k, ok := SpecKind(name)
	if !ok {
		return unknownKind(name)
	}
	if err := backendKinds[k].fromRecord(raw, s); err != nil {
		return fmt.Errorf("spec.%s: %w", name, err)
	}
	return nil
}
