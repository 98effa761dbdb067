package policy

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/flowdrop/gateway/internal/structwire"
	"github.com/flowdrop/gateway/registry/schema"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Limits bound one call's arguments and each tool's concurrency. The
// argument limits are always on: a zero field takes its default
// (WithDefaults); MaxInFlightPerTool zero means unlimited.
type Limits struct {
	// MaxArgumentBytes bounds the arguments' protobuf wire size (proto.Size),
	// as sent and as normalized; a JSON-string repair stops building at it.
	MaxArgumentBytes int
	// MaxStringLength bounds every string — values and object keys — in bytes.
	MaxStringLength int
	// MaxDepth bounds container nesting; the top-level arguments object is depth 1.
	MaxDepth int
	// MaxListElements bounds the list elements in one call's arguments, in total.
	MaxListElements int
	// MaxObjectKeys bounds the object keys in one call's arguments, in total
	// (the top-level parameters included).
	MaxObjectKeys int
	// MaxInFlightPerTool bounds concurrent calls per tool (see InFlight).
	MaxInFlightPerTool int
	// MaxValidationSteps bounds the work of validating one call's
	// arguments (or one result against an output schema) against the
	// tool's schema: subschema evaluations and members visited, worst case
	// (registry/schema's cost bound). Arguments over it are refused before
	// anything is evaluated.
	MaxValidationSteps int
	// MaxSchemaEvaluations bounds a schema at registration: the most
	// subschema evaluations one argument value may cost (combinator
	// branching multiplied along nesting and $ref). The registry is
	// compiled with it at start; a reload cannot change it.
	MaxSchemaEvaluations int
	// Mode is ModeEnforce (also "") or ModeShadow. In shadow mode the
	// argument limits above are only watched (a call over them proceeds,
	// recorded as a shadow denial) while the defaults stay enforced: they
	// bound the gateway's own memory and work, which no mode may lift.
	// MaxInFlightPerTool, MaxValidationSteps and MaxSchemaEvaluations are
	// enforced in either mode.
	Mode string
}

// The default argument limits. They bound the memory one call can make the
// gateway spend — decoded, a Value costs ~50–80 bytes however few bytes it
// took on the wire, so counts matter more than bytes — while staying far
// above what a model's tool call holds:
//   - 4 MiB of arguments: the backend send limit (server.DefaultMsgSize);
//     anything larger could never be forwarded.
//   - 1 MiB per string: a large file's contents; larger strings are bulk
//     data, not tool arguments.
//   - depth 100: normalize.MaxJSONDepth, so a repaired value and a sent
//     one nest alike.
//   - 50,000 list elements and 10,000 keys in total: a few MB decoded per
//     call, so 16 concurrent worst-case calls stay under 256 MB resident
//     (BENCHMARKS.md, "Adversarial arguments").
//
// The validation bounds are registry/schema's defaults (DefaultMaxSteps,
// DefaultMaxEvaluations): see RELIABILITY.md for what they cost.
const (
	DefaultMaxArgumentBytes     = 4 << 20
	DefaultMaxStringLength      = 1 << 20
	DefaultMaxDepth             = 100
	DefaultMaxListElements      = 50_000
	DefaultMaxObjectKeys        = 10_000
	DefaultMaxValidationSteps   = schema.DefaultMaxSteps
	DefaultMaxSchemaEvaluations = schema.DefaultMaxEvaluations
)

// WithDefaults returns l with every zero argument limit set to its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxArgumentBytes, DefaultMaxArgumentBytes)
	def(&l.MaxStringLength, DefaultMaxStringLength)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxListElements, DefaultMaxListElements)
	def(&l.MaxObjectKeys, DefaultMaxObjectKeys)
	def(&l.MaxValidationSteps, DefaultMaxValidationSteps)
	def(&l.MaxSchemaEvaluations, DefaultMaxSchemaEvaluations)
	return l
}

// The limits' names, as in the policy file and in a refusal's Limit.
const (
	LimitMaxArgumentBytes = "max_argument_bytes"
	LimitMaxStringLength  = "max_string_length"
	LimitMaxDepth         = "max_depth"
	LimitMaxListElements  = "max_list_elements"
	LimitMaxObjectKeys    = "max_object_keys"
	// LimitMaxValidationSteps is MaxValidationSteps, which Exceeded words
	// for a validation that could take too long (path: where the worst
	// case crossed it).
	LimitMaxValidationSteps = "max_validation_steps"
)

// Exceeded is the refusal of a call whose arguments cross the limit named
// limit (one of the Limit* names) at path, an RFC 6901 pointer ("" is the
// whole arguments object). repair says the limit stopped a JSON-string
// repair (the arguments as sent were within it).
func (l Limits) Exceeded(tool, limit, path string, repair bool) *Error {
	at := path
	if at == "" {
		at = `""`
	}
	what := "arguments"
	if repair {
		what = "arguments decoded from a JSON string"
	}
	var reason, msg string
	switch limit {
	case LimitMaxArgumentBytes:
		reason, msg = ReasonLimitArgumentSize, fmt.Sprintf("%s are over the max_argument_bytes limit of %d bytes at %s", what, l.MaxArgumentBytes, at)
	case LimitMaxStringLength:
		reason, msg = ReasonLimitStringLength, fmt.Sprintf("%s hold a string or key over the max_string_length limit of %d bytes at %s", what, l.MaxStringLength, at)
	case LimitMaxDepth:
		reason, msg = ReasonLimitDepth, fmt.Sprintf("%s nest deeper than the max_depth limit of %d at %s", what, l.MaxDepth, at)
	case LimitMaxListElements:
		reason, msg = ReasonLimitListElements, fmt.Sprintf("%s hold more than the max_list_elements limit of %d list elements in total, at %s", what, l.MaxListElements, at)
	case LimitMaxObjectKeys:
		reason, msg = ReasonLimitObjectKeys, fmt.Sprintf("%s hold more than the max_object_keys limit of %d object keys in total, at %s", what, l.MaxObjectKeys, at)
	case LimitMaxValidationSteps:
		reason, msg = ReasonLimitValidationSteps, fmt.Sprintf("validating the %s against the tool's schema could take more than the max_validation_steps limit of %d steps (the worst case crosses it at %s): send fewer or smaller values", what, l.MaxValidationSteps, at)
	default:
		reason, msg = ReasonLimitArgumentSize, fmt.Sprintf("%s cross the %s limit at %s", what, limit, at)
	}
	return &Error{Code: InvalidArgument, Reason: reason, Limit: limit, Tool: tool, Message: fmt.Sprintf("tool %q: %s", tool, msg)}
}

// WithoutKind is the refusal of a Value with no kind set at path: it
// decodes, but means nothing a backend or a schema could check.
func WithoutKind(tool, path string) *Error {
	if path == "" {
		path = `""`
	}
	return &Error{Code: InvalidArgument, Reason: ReasonValueWithoutKind, Tool: tool,
		Message: fmt.Sprintf("tool %q: the argument at %s is a google.protobuf.Value with no kind set", tool, path)}
}

// CheckWire applies the argument limits to a Struct's wire bytes, before
// they are decoded (structwire.Scan: no allocation, and the work stops at
// the first limit crossed). It also refuses a kind-less Value. canonical
// reports bytes that hold exactly what decoding them yields (see
// structwire.ScanResult.Canonical); bytes that do not decode pass here and
// are refused by their decode.
func (l Limits) CheckWire(tool string, b []byte) (canonical bool, err error) {
	l = l.WithDefaults()
	if len(b) > l.MaxArgumentBytes {
		return false, l.Exceeded(tool, LimitMaxArgumentBytes, "", false)
	}
	r := structwire.Scan(b, structwire.Limits{MaxDepth: l.MaxDepth, MaxStringLength: l.MaxStringLength,
		MaxElements: l.MaxListElements, MaxKeys: l.MaxObjectKeys})
	switch {
	case r.Kindless:
		return false, WithoutKind(tool, r.Path)
	case r.Exceeded != 0:
		return false, l.Exceeded(tool, wireLimitNames[r.Exceeded], r.Path, false)
	}
	return r.Canonical && !r.Malformed, nil
}

var wireLimitNames = [...]string{
	structwire.LimitDepth:        LimitMaxDepth,
	structwire.LimitStringLength: LimitMaxStringLength,
	structwire.LimitElements:     LimitMaxListElements,
	structwire.LimitKeys:         LimitMaxObjectKeys,
}

// Check applies the argument limits to decoded arguments and refuses a
// kind-less Value. The server runs it on the arguments as received when
// they came decoded (CheckWire when they came as bytes) and again on the
// normalized arguments (JSON decoding can deepen or grow them).
func (l Limits) Check(tool string, args *structpb.Struct) error {
	if args == nil {
		return nil
	}
	l = l.WithDefaults()
	w := limitWalker{l: l, tool: tool}
	n, ok := w.object(args, 1)
	if !ok { // the walk stopped early: the bytes limit still comes first
		n = proto.Size(args)
	}
	if n > l.MaxArgumentBytes {
		return l.Exceeded(tool, LimitMaxArgumentBytes, "", false)
	}
	if ok {
		return nil
	}
	return w.err(tool)
}

// limitWalker walks decoded arguments, adding up their wire size as it
// goes (proto.Size's, which TestLimitWalkSizeIsProtoSize holds it to: one
// walk instead of a walk and protobuf's own sizing pass); on a failure it
// records what and, while unwinding, the path (innermost token first).
type limitWalker struct {
	l              Limits
	tool           string
	elements, keys int
	limit          string // the limit crossed, or "" for a kind-less Value
	tokens         []string
}

func (w *limitWalker) err(tool string) error {
	var b []byte
	for i := len(w.tokens) - 1; i >= 0; i-- {
		b = appendToken(b, w.tokens[i])
	}
	if w.limit == "" {
		return WithoutKind(tool, string(b))
	}
	return w.l.Exceeded(tool, w.limit, string(b), false)
}

func (w *limitWalker) fail(limit string) bool {
	w.limit = limit
	return false
}

// object walks a Struct; size is its wire size when ok.
func (w *limitWalker) object(s *structpb.Struct, d int) (size int, ok bool) {
	if d > w.l.MaxDepth {
		return 0, w.fail(LimitMaxDepth)
	}
	for k, v := range s.GetFields() {
		w.keys++
		var vs int
		ok := true
		switch {
		case w.keys > w.l.MaxObjectKeys:
			ok = w.fail(LimitMaxObjectKeys)
		case len(k) > w.l.MaxStringLength:
			ok = w.fail(LimitMaxStringLength)
		default:
			vs, ok = w.value(v, d)
		}
		if !ok {
			w.tokens = append(w.tokens, k)
			return 0, false
		}
		// A map entry writes its key and its value, empty or not.
		entry := 1 + protowire.SizeBytes(len(k)) + 1 + protowire.SizeBytes(vs)
		size += 1 + protowire.SizeBytes(entry)
	}
	return size + unknownSize(s), true
}

// value walks a Value; size is its wire size when ok.
func (w *limitWalker) value(v *structpb.Value, d int) (size int, ok bool) {
	switch k := v.GetKind().(type) {
	case nil:
		return 0, w.fail("")
	case *structpb.Value_NullValue:
		size = 1 + protowire.SizeVarint(uint64(k.NullValue))
	case *structpb.Value_NumberValue:
		size = 1 + protowire.SizeFixed64()
	case *structpb.Value_BoolValue:
		size = 1 + 1
	case *structpb.Value_StringValue:
		if len(k.StringValue) > w.l.MaxStringLength {
			return 0, w.fail(LimitMaxStringLength)
		}
		size = 1 + protowire.SizeBytes(len(k.StringValue))
	case *structpb.Value_StructValue:
		n, ok := w.object(k.StructValue, d+1)
		if !ok {
			return 0, false
		}
		size = 1 + protowire.SizeBytes(n)
	case *structpb.Value_ListValue:
		if d+1 > w.l.MaxDepth {
			return 0, w.fail(LimitMaxDepth)
		}
		n := 0
		for i, e := range k.ListValue.GetValues() {
			w.elements++
			var es int
			ok := true
			if w.elements > w.l.MaxListElements {
				ok = w.fail(LimitMaxListElements)
			} else {
				es, ok = w.value(e, d+1)
			}
			if !ok {
				w.tokens = append(w.tokens, strconv.Itoa(i))
				return 0, false
			}
			n += 1 + protowire.SizeBytes(es)
		}
		size = 1 + protowire.SizeBytes(n+unknownSize(k.ListValue))
	default: // a kind this walker does not know: proto.Size counts it
		return proto.Size(v), true
	}
	return size + unknownSize(v), true
}

// unknownSize is the bytes of fields m's type does not declare, which
// proto.Size counts (decoding with DiscardUnknown leaves none).
func unknownSize(m proto.Message) int { return len(m.ProtoReflect().GetUnknown()) }

// appendToken appends "/" and the RFC 6901-escaped token.
func appendToken(b []byte, tok string) []byte {
	b = append(b, '/')
	for i := 0; i < len(tok); i++ {
		switch tok[i] {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, tok[i])
		}
	}
	return b
}

// InFlight bounds concurrent calls per tool with a non-blocking semaphore:
// a call over the limit is refused at once rather than queued.
type InFlight struct {
	max int
	mu  sync.Mutex
	n   map[string]int // entries are removed at zero, so the map holds only busy tools
}

// NewInFlight returns a limiter allowing max concurrent calls per tool (max <= 0: unlimited).
func NewInFlight(max int) *InFlight { return &InFlight{max: max, n: map[string]int{}} }

// Acquire takes a slot for tool. On success the caller must call release
// exactly once (it is idempotent, to make defer-and-early-release safe).
func (f *InFlight) Acquire(tool string) (release func(), err error) {
	if err := f.Enter(tool); err != nil {
		return nil, err
	}
	if f == nil || f.max <= 0 {
		return func() {}, nil
	}
	var once sync.Once
	return func() { once.Do(func() { f.Leave(tool) }) }, nil
}

// Enter is Acquire without the release function, for the per-call path
// (the function and its once are two allocations a call): on success the
// caller must call Leave(tool) exactly once.
func (f *InFlight) Enter(tool string) error {
	if f == nil || f.max <= 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[tool] >= f.max {
		return &Error{Code: ResourceExhausted, Reason: ReasonLimitInFlight, Limit: "max_in_flight_per_tool", Tool: tool,
			Message: fmt.Sprintf("tool %q already has %d calls in flight, the max_in_flight_per_tool limit", tool, f.max)}
	}
	f.n[tool]++
	return nil
}

// Leave frees the slot a successful Enter took.
func (f *InFlight) Leave(tool string) {
	if f == nil || f.max <= 0 {
		return
	}
	f.mu.Lock()
	if f.n[tool]--; f.n[tool] <= 0 {
		delete(f.n, tool)
	}
	f.mu.Unlock()
}
