package normalize

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// benchSchema is a realistic 10-parameter tool schema (a "create issue" tool).
const benchSchema = `{
  "type": "object",
  "properties": {
    "repo":      {"type": "string"},
    "title":     {"type": "string"},
    "body":      {"type": "string"},
    "labels":    {"type": "array", "items": {"type": "string"}},
    "assignees": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
    "milestone": {"type": ["integer", "null"]},
    "draft":     {"type": "boolean"},
    "fields":    {"type": "object", "additionalProperties": {"type": "string"}},
    "ops":       {"type": "array", "items": {"$ref": "#/$defs/Op"}},
    "priority":  {"type": "string", "enum": ["low", "normal", "high"]}
  },
  "$defs": {"Op": {"type": "object", "properties": {"op": {"type": "string"}, "path": {"type": "string"}, "value": {}}}}
}`

// benchArgs needs no repair: about 1 KiB of well-typed arguments.
const benchArgs = `{
  "repo": "flowdrop/gateway",
  "title": "Normalization drops the second page of results when the cursor is empty",
  "body": "Steps to reproduce: call list_items with page_size 50 and an empty cursor, then follow next_cursor. Expected: 120 items across three pages. Actual: the second page is empty and the call reports success. Seen with gateway 1.4.2 on linux/amd64; the backend logs show the request arriving with the cursor field unset. Workaround: pass the cursor explicitly.",
  "labels": ["bug", "normalize", "P1", "needs-triage"],
  "assignees": ["ada", "grace"],
  "milestone": 14,
  "draft": false,
  "fields": {"component": "gateway", "severity": "major", "found_in": "1.4.2", "os": "linux"},
  "ops": [
    {"op": "add", "path": "/labels/-", "value": "regression"},
    {"op": "replace", "path": "/milestone", "value": 15},
    {"op": "remove", "path": "/assignees/1"}
  ],
  "priority": "high"
}`

// walkBaseline is the floor Apply's no-repair path is measured against:
// visit every value once, type-switching on its kind.
func walkBaseline(v *structpb.Value) int {
	n := 0
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		n += len(k.StringValue)
	case *structpb.Value_NumberValue, *structpb.Value_BoolValue, *structpb.Value_NullValue:
		n++
	case *structpb.Value_StructValue:
		for _, e := range k.StructValue.GetFields() {
			n += walkBaseline(e)
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			n += walkBaseline(e)
		}
	}
	return n
}

var sink int

func BenchmarkWalkBaseline(b *testing.B) {
	args := structpb.NewStructValue(mustStruct(b, benchArgs))
	b.ReportAllocs()
	for b.Loop() {
		sink += walkBaseline(args)
	}
}

func BenchmarkApply(b *testing.B) {
	b.Run("no-repair-10-params", func(b *testing.B) {
		p := mustPlan(b, benchSchema)
		args := mustStruct(b, benchArgs)
		if out, rep := p.Apply(args); out != args || rep.Changed() || len(rep.Skipped) != 0 {
			b.Fatalf("bench args need repair: %+v", rep)
		}
		b.ReportAllocs()
		for b.Loop() {
			p.Apply(args)
		}
	})
	b.Run("stringified-array-4KiB-plus-double-escaped", func(b *testing.B) {
		p := mustPlan(b, benchSchema)
		var ops []string
		for i := 0; len(strings.Join(ops, ",")) < 4096; i++ {
			ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/items/%d","value":"Tom &amp;amp; Jerry #%d &lt;b&gt;"}`, i, i))
		}
		src := "[" + strings.Join(ops, ",") + "]"
		args := mustStruct(b, benchArgs)
		args.Fields["ops"] = structpb.NewStringValue(src)
		args.Fields["title"] = structpb.NewStringValue("Ember &amp;amp; Oak &amp;amp;amp; Co")
		args.Fields["body"] = structpb.NewStringValue("cd /repo &amp;&amp; go test ./... &amp;&amp; echo &quot;ok&quot;")
		out, rep := p.Apply(args)
		if len(rep.Repairs) < 3 || out.Fields["ops"].GetListValue() == nil {
			b.Fatalf("expected repairs, got %+v", rep)
		}
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			p.Apply(args)
		}
	})
}

// BenchmarkApplyVsWalk interleaves batches of the no-repair Apply and the bare
// walk and reports their time ratio ("apply/walk", target <= 1.5), so a busy
// machine slows both sides alike instead of skewing two separate benchmarks.
func BenchmarkApplyVsWalk(b *testing.B) {
	p := mustPlan(b, benchSchema)
	args := mustStruct(b, benchArgs)
	argsV := structpb.NewStructValue(args)
	const batch = 64
	var tApply, tWalk time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range batch {
			p.Apply(args)
		}
		t1 := time.Now()
		for range batch {
			sink += walkBaseline(argsV)
		}
		t2 := time.Now()
		tApply += t1.Sub(t0)
		tWalk += t2.Sub(t1)
	}
	b.ReportMetric(float64(tApply)/float64(tWalk), "apply/walk")
}
