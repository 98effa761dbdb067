package normalize

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Limits bound what JSON decoding may build while it parses, so an
// adversarial string stops costing work at the limit rather than after a
// whole tree was built. Zero leaves a field unbounded. Depth counts like the
// gateway's policy: the arguments object is depth 1, a container it holds
// depth 2. Elements and keys are totals over everything one Apply decodes.
type Limits struct {
	// MaxBytes bounds the estimated encoded (protobuf) size of the values
	// one Apply decodes from JSON strings.
	MaxBytes int
	// MaxStringLength bounds every decoded string and object key, in bytes.
	MaxStringLength int
	// MaxDepth bounds container nesting (arguments object = 1).
	MaxDepth int
	// MaxElements bounds the list elements decoded, in total.
	MaxElements int
	// MaxKeys bounds the object keys decoded, in total.
	MaxKeys int
}

// LimitKind names the limit a decode stopped at.
type LimitKind uint8

// The limits, as the LimitError reports them.
const (
	LimitBytes LimitKind = iota + 1
	LimitStringLength
	LimitDepth
	LimitElements
	LimitKeys
)

// String is a short stable name ("bytes", "string-length", ...).
func (k LimitKind) String() string {
	switch k {
	case LimitBytes:
		return "bytes"
	case LimitStringLength:
		return "string-length"
	case LimitDepth:
		return "depth"
	case LimitElements:
		return "elements"
	case LimitKeys:
		return "keys"
	}
	return "unknown"
}

// LimitError is a decode stopped at a limit: which one, its value, and the
// RFC 6901 pointer of the value that crossed it.
type LimitError struct {
	Kind LimitKind
	Max  int
	Path string
}

func (e *LimitError) Error() string {
	what := map[LimitKind]string{
		LimitBytes:        "decoded arguments are over the size limit of %d bytes",
		LimitStringLength: "a decoded string is over the length limit of %d bytes",
		LimitDepth:        "decoded arguments nest deeper than the limit of %d",
		LimitElements:     "decoded arguments hold more than the limit of %d list elements",
		LimitKeys:         "decoded arguments hold more than the limit of %d object keys",
	}[e.Kind]
	if what == "" {
		what = "a decode limit of %d was exceeded"
	}
	path := e.Path
	if path == "" {
		path = `""`
	}
	return fmt.Sprintf(what, e.Max) + " at " + path
}

// ApplyWithin is Apply with limits on what JSON decoding may build: a
// string whose decoding would cross one stops there, and the call gets a
// *LimitError (naming the limit and the path) instead of arguments — the
// limits are a refusal, not a reason to pass the string through unchanged.
// With nothing to repair it allocates nothing, like Apply.
func (p *Plan) ApplyWithin(args *structpb.Struct, lim Limits) (*structpb.Struct, Report, error) {
	if args == nil || !p.dirtyTop(args) {
		return args, Report{}, nil
	}
	b := &budget{lim: lim}
	w := walker{p: p, path: make([]byte, 0, 64), budget: b}
	out, _ := w.top(args, false)
	if b.err != nil {
		return nil, w.r, b.err
	}
	return out, w.r, nil
}

// budget is what one Apply's JSON decoding may still build; err is set
// when a limit stopped it.
type budget struct {
	lim                   Limits
	bytes, elements, keys int
	err                   *LimitError
	// tokens is the path below the decoded string, innermost first, built
	// while a failed parse unwinds.
	tokens []string
}

// exceeded records that kind was crossed; the parse then fails.
func (b *budget) exceeded(kind LimitKind, max int) {
	if b.err == nil {
		b.err = &LimitError{Kind: kind, Max: max}
	}
}

// within reports whether n more estimated bytes fit.
func (b *budget) addBytes(n int) bool {
	b.bytes += n
	if b.lim.MaxBytes > 0 && b.bytes > b.lim.MaxBytes {
		b.exceeded(LimitBytes, b.lim.MaxBytes)
		return false
	}
	return true
}

func (b *budget) str(n int) bool {
	if b.lim.MaxStringLength > 0 && n > b.lim.MaxStringLength {
		b.exceeded(LimitStringLength, b.lim.MaxStringLength)
		return false
	}
	return b.addBytes(n + 4) // tag, length, Value wrapper
}

func (b *budget) element() bool {
	b.elements++
	if b.lim.MaxElements > 0 && b.elements > b.lim.MaxElements {
		b.exceeded(LimitElements, b.lim.MaxElements)
		return false
	}
	return b.addBytes(2)
}

func (b *budget) key() bool {
	b.keys++
	if b.lim.MaxKeys > 0 && b.keys > b.lim.MaxKeys {
		b.exceeded(LimitKeys, b.lim.MaxKeys)
		return false
	}
	return b.addBytes(4) // entry tag and length, key tag, value tag
}

// depth reports whether a container at parser depth d (1 = the decoded
// value itself), inside a string at policy depth base, fits.
func (b *budget) depth(base, d int) bool {
	if b.lim.MaxDepth > 0 && base+d > b.lim.MaxDepth {
		b.exceeded(LimitDepth, b.lim.MaxDepth)
		return false
	}
	return true
}

// at prepends a path token while a failed parse unwinds.
func (b *budget) at(tok string) {
	if b.err != nil {
		b.tokens = append(b.tokens, tok)
	}
}

// finish sets the error's path: prefix (the decoded string's own pointer)
// then the tokens below it, outermost first.
func (b *budget) finish(prefix string) {
	var sb strings.Builder
	sb.WriteString(prefix)
	for i := len(b.tokens) - 1; i >= 0; i-- {
		sb.Write(appendToken(nil, b.tokens[i]))
	}
	b.err.Path = sb.String()
	b.tokens = nil
}

func indexToken(i int) string { return strconv.Itoa(i) }
