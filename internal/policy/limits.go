package policy

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Limits bound one call's arguments and each tool's concurrency. Zero means
// no limit for that field.
type Limits struct {
	// MaxArgumentBytes bounds the arguments' protobuf wire size (proto.Size).
	MaxArgumentBytes int
	// MaxStringLength bounds every string — values and object keys — in bytes.
	MaxStringLength int
	// MaxDepth bounds container nesting; the top-level arguments object is depth 1.
	MaxDepth int
	// MaxInFlightPerTool bounds concurrent calls per tool (see InFlight).
	MaxInFlightPerTool int
}

// Check applies the size, string-length and depth limits. The server runs it
// on the arguments as received (to bound normalization work) and again on
// the normalized arguments (JSON decoding can deepen or grow them).
func (l Limits) Check(tool string, args *structpb.Struct) error {
	if args == nil {
		return nil
	}
	if l.MaxArgumentBytes > 0 {
		if n := proto.Size(args); n > l.MaxArgumentBytes {
			return &Error{Code: InvalidArgument, Reason: ReasonLimitArgumentSize, Limit: "max_argument_bytes", Tool: tool,
				Message: fmt.Sprintf("tool %q: arguments are %d bytes, over the max_argument_bytes limit of %d", tool, n, l.MaxArgumentBytes)}
		}
	}
	if l.MaxStringLength <= 0 && l.MaxDepth <= 0 {
		return nil
	}
	w := limitWalker{l: l, tool: tool, path: make([]byte, 0, 64)}
	return w.object(args, 1)
}

type limitWalker struct {
	l    Limits
	tool string
	path []byte
}

func (w *limitWalker) depth(d int) error {
	if w.l.MaxDepth > 0 && d > w.l.MaxDepth {
		return &Error{Code: InvalidArgument, Reason: ReasonLimitDepth, Limit: "max_depth", Tool: w.tool,
			Message: fmt.Sprintf("tool %q: arguments nest deeper than the max_depth limit of %d at %s", w.tool, w.l.MaxDepth, w.at())}
	}
	return nil
}

func (w *limitWalker) str(s string, what string) error {
	if w.l.MaxStringLength > 0 && len(s) > w.l.MaxStringLength {
		return &Error{Code: InvalidArgument, Reason: ReasonLimitStringLength, Limit: "max_string_length", Tool: w.tool,
			Message: fmt.Sprintf("tool %q: %s at %s is %d bytes, over the max_string_length limit of %d", w.tool, what, w.at(), len(s), w.l.MaxStringLength)}
	}
	return nil
}

func (w *limitWalker) at() string {
	if len(w.path) == 0 {
		return `""` // JSON Pointer to the whole arguments object
	}
	return string(w.path)
}

func (w *limitWalker) object(s *structpb.Struct, d int) error {
	if err := w.depth(d); err != nil {
		return err
	}
	for k, v := range s.GetFields() {
		n := len(w.path)
		w.path = appendToken(w.path, k)
		if err := w.str(k, "key"); err != nil {
			return err
		}
		if err := w.value(v, d); err != nil {
			return err
		}
		w.path = w.path[:n]
	}
	return nil
}

func (w *limitWalker) value(v *structpb.Value, d int) error {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return w.str(k.StringValue, "string")
	case *structpb.Value_StructValue:
		return w.object(k.StructValue, d+1)
	case *structpb.Value_ListValue:
		if err := w.depth(d + 1); err != nil {
			return err
		}
		for i, e := range k.ListValue.GetValues() {
			n := len(w.path)
			w.path = fmt.Appendf(append(w.path, '/'), "%d", i)
			if err := w.value(e, d+1); err != nil {
				return err
			}
			w.path = w.path[:n]
		}
	}
	return nil
}

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
	if f == nil || f.max <= 0 {
		return func() {}, nil
	}
	f.mu.Lock()
	if f.n[tool] >= f.max {
		f.mu.Unlock()
		return nil, &Error{Code: ResourceExhausted, Reason: ReasonLimitInFlight, Limit: "max_in_flight_per_tool", Tool: tool,
			Message: fmt.Sprintf("tool %q already has %d calls in flight, the max_in_flight_per_tool limit", tool, f.max)}
	}
	f.n[tool]++
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if f.n[tool]--; f.n[tool] <= 0 {
				delete(f.n, tool)
			}
			f.mu.Unlock()
		})
	}, nil
}
