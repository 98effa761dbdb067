package normalize

import (
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Apply normalizes args per RT-TOOL-8 without mutating them.
//
// When nothing needs repair it returns args itself and allocates nothing.
// Otherwise it returns a new Struct built copy-on-write: containers on the
// path to a changed value are copied, while unchanged sibling sub-values are
// shared with args (so callers must not mutate either afterwards if the
// other is still in use). The report lists repairs and skips in a
// deterministic order: keys sorted, depth-first.
func (p *Plan) Apply(args *structpb.Struct) (*structpb.Struct, Report) {
	if args == nil || !p.dirtyTop(args) {
		return args, Report{}
	}
	w := walker{p: p, path: make([]byte, 0, 64)}
	out, _ := w.top(args, false)
	return out, w.r
}

// ApplyInPlace normalizes args by mutating them (the caller asks for it) and
// returns the report. It allocates only for what it changes.
func (p *Plan) ApplyInPlace(args *structpb.Struct) Report {
	if args == nil || !p.dirtyTop(args) {
		return Report{}
	}
	w := walker{p: p, path: make([]byte, 0, 64)}
	w.top(args, true)
	return w.r
}

// dirtyTop is the allocation-free pre-check: would anything be repaired or
// skipped? It lets the no-repair path return args untouched.
func (p *Plan) dirtyTop(args *structpb.Struct) bool {
	for k, v := range args.GetFields() {
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			if p.isCandidate(k) {
				return true // decoded or skipped: either way reported
			}
			if p.entitiesChange(s.StringValue) {
				return true
			}
			continue
		}
		if p.dirty(v) {
			return true
		}
	}
	return false
}

func (p *Plan) entitiesChange(s string) bool {
	if strings.IndexByte(s, '&') < 0 {
		return false // clause 5: no character reference, nothing to do
	}
	_, passes, _ := DecodeEntities(s, p.opts.maxPasses)
	return passes > 0
}

func (p *Plan) dirty(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return p.entitiesChange(k.StringValue)
	case *structpb.Value_StructValue:
		for _, e := range k.StructValue.GetFields() {
			if p.dirty(e) {
				return true
			}
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			if p.dirty(e) {
				return true
			}
		}
	}
	return false
}

// walker does the rewriting pass; path holds the current RFC 6901 pointer.
type walker struct {
	p    *Plan
	path []byte
	r    Report
	// budget bounds JSON decoding (ApplyWithin); nil for Apply.
	budget *budget
}

func appendToken(b []byte, tok string) []byte {
	b = append(b, '/')
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}

func sortedFieldKeys(m map[string]*structpb.Value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// top rewrites the arguments object: parameters get JSON decoding (clause
// 2–3) and every string leaf gets entity decoding (clause 4).
func (w *walker) top(args *structpb.Struct, inPlace bool) (*structpb.Struct, bool) {
	var fields map[string]*structpb.Value
	if inPlace {
		fields = args.Fields
	}
	base := len(w.path)
	for _, k := range sortedFieldKeys(args.Fields) {
		v := args.Fields[k]
		w.path = appendToken(w.path[:base], k)
		nv, changed := w.param(k, v, inPlace)
		if w.budget != nil && w.budget.err != nil {
			w.path = w.path[:base]
			return nil, false // stopped at a limit: nothing to return
		}
		if !changed {
			continue
		}
		if fields == nil {
			fields = make(map[string]*structpb.Value, len(args.Fields))
			for kk, vv := range args.Fields {
				fields[kk] = vv
			}
		}
		fields[k] = nv
	}
	w.path = w.path[:base]
	if fields == nil {
		return args, false
	}
	if inPlace {
		return args, true
	}
	return &structpb.Struct{Fields: fields}, true
}

func (w *walker) param(name string, v *structpb.Value, inPlace bool) (*structpb.Value, bool) {
	s, isString := v.GetKind().(*structpb.Value_StringValue)
	if !isString || !w.p.anyCandidate {
		return w.value(v, inPlace)
	}
	want := w.p.lookup(name)
	if want == 0 {
		return w.value(v, inPlace)
	}
	// Judged on the string as sent, before entity decoding (our reading).
	parsed, reason, _ := parseStrictJSONWithin(s.StringValue, w.budget, 1)
	if reason == limitHit {
		w.budget.finish(string(w.path))
		return nil, false
	}
	got := ""
	if reason == 0 {
		switch parsed.GetKind().(type) {
		case *structpb.Value_ListValue:
			if want&tArray == 0 {
				got, reason = "array", WrongShape
			}
		case *structpb.Value_StructValue:
			if want&tObject == 0 {
				got, reason = "object", WrongShape
			}
		case *structpb.Value_StringValue:
			got, reason = "string", WrongShape
		case *structpb.Value_NumberValue:
			got, reason = "number", WrongShape
		case *structpb.Value_BoolValue:
			got, reason = "boolean", WrongShape
		case *structpb.Value_NullValue:
			got, reason = "null", WrongShape
		}
	}
	if reason != 0 {
		w.r.Skipped = append(w.r.Skipped, Skip{Path: string(w.path), Declared: want.declared(), Reason: reason, Got: got})
		// Clause 4 is independent: the string still gets entity decoding.
		return w.value(v, inPlace)
	}
	w.r.Repairs = append(w.r.Repairs, Repair{Path: string(w.path), Kind: JSONDecoded})
	// The parsed tree is ours alone, so its leaves are decoded in place.
	w.value(parsed, true)
	return parsed, true
}

// value applies entity decoding to every string leaf under v.
func (w *walker) value(v *structpb.Value, inPlace bool) (*structpb.Value, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		if strings.IndexByte(k.StringValue, '&') < 0 {
			return v, false
		}
		out, passes, hit := DecodeEntities(k.StringValue, w.p.opts.maxPasses)
		if passes == 0 {
			return v, false
		}
		w.r.Repairs = append(w.r.Repairs, Repair{Path: string(w.path), Kind: EntitiesDecoded, Passes: passes, BoundHit: hit})
		if inPlace {
			k.StringValue = out
			return v, true
		}
		return newStringValue(out), true
	case *structpb.Value_StructValue:
		ns, changed := w.object(k.StructValue, inPlace)
		if !changed || inPlace {
			return v, changed
		}
		return newStructValueOf(ns), true
	case *structpb.Value_ListValue:
		nl, changed := w.list(k.ListValue, inPlace)
		if !changed || inPlace {
			return v, changed
		}
		return newListValueOf(nl), true
	}
	return v, false
}

func (w *walker) object(s *structpb.Struct, inPlace bool) (*structpb.Struct, bool) {
	if len(s.GetFields()) == 0 {
		return s, false
	}
	var fields map[string]*structpb.Value
	if inPlace {
		fields = s.Fields
	}
	base := len(w.path)
	for _, k := range sortedFieldKeys(s.Fields) {
		w.path = appendToken(w.path[:base], k)
		nv, changed := w.value(s.Fields[k], inPlace)
		if !changed {
			continue
		}
		if fields == nil {
			fields = make(map[string]*structpb.Value, len(s.Fields))
			for kk, vv := range s.Fields {
				fields[kk] = vv
			}
		}
		fields[k] = nv
	}
	w.path = w.path[:base]
	if fields == nil {
		return s, false
	}
	if inPlace {
		return s, true
	}
	return &structpb.Struct{Fields: fields}, true
}

func (w *walker) list(l *structpb.ListValue, inPlace bool) (*structpb.ListValue, bool) {
	var vals []*structpb.Value
	if inPlace {
		vals = l.Values
	}
	base := len(w.path)
	for i, e := range l.GetValues() {
		w.path = strconv.AppendInt(append(w.path[:base], '/'), int64(i), 10)
		nv, changed := w.value(e, inPlace)
		if !changed {
			continue
		}
		if vals == nil {
			vals = append([]*structpb.Value(nil), l.Values...)
		}
		vals[i] = nv
	}
	w.path = w.path[:base]
	if vals == nil {
		return l, false
	}
	if inPlace {
		return l, true
	}
	return &structpb.ListValue{Values: vals}, true
}

func newStructValueOf(s *structpb.Struct) *structpb.Value {
	return &structpb.Value{Kind: &structpb.Value_StructValue{StructValue: s}}
}

func newListValueOf(l *structpb.ListValue) *structpb.Value {
	return &structpb.Value{Kind: &structpb.Value_ListValue{ListValue: l}}
}
