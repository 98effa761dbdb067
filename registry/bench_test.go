package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

// A realistic tool: 10 parameters of mixed types, nested objects and arrays.
const benchSchema = `{"type":"object","additionalProperties":false,"required":["title","board_id","ops"],
 "properties":{
  "title":{"type":"string","minLength":1,"maxLength":200},
  "board_id":{"type":"string","pattern":"^[a-z0-9-]+$"},
  "description":{"type":"string"},
  "priority":{"type":"integer","minimum":0,"maximum":5},
  "ratio":{"type":"number"},
  "archived":{"type":"boolean"},
  "tags":{"type":"array","items":{"type":"string"},"maxItems":20},
  "owner":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"email":{"type":"string"}},"required":["id"]},
  "ops":{"type":"array","items":{"type":"object","required":["op"],"properties":{"op":{"enum":["add","remove","move"]},"card":{"type":"string"},"position":{"type":"integer"}}}},
  "due":{"type":["string","null"]}
 }}`

// ≈1 KiB of arguments.
const benchArgs = `{"title":"Quarterly planning: Ember & Oak launch","board_id":"ember-oak-2026-q3",
 "description":"Collect every card for the launch, sort by owner, and move blocked items to the review column before Friday's sync with the partner team. Anything without an owner goes to triage, and anything older than two sprints is archived.",
 "priority":3,"ratio":0.75,"archived":false,
 "tags":["launch","q3","partner","marketing","design","review"],
 "owner":{"id":4242,"name":"Ada Lovelace","email":"ada@example.com"},
 "ops":[{"op":"add","card":"Write launch announcement draft","position":1},
        {"op":"move","card":"Finalize pricing page copy","position":2},
        {"op":"remove","card":"Old teaser campaign"},
        {"op":"add","card":"Partner co-marketing checklist","position":4},
        {"op":"add","card":"Localisation review for DE/FR/JA","position":5},
        {"op":"move","card":"Press kit assets and screenshots","position":6},
        {"op":"add","card":"Support FAQ for launch week","position":7}],
 "due":"2026-09-30T17:00:00Z"}`

func BenchmarkValidate(b *testing.B) {
	e := compileTool(b, benchSchema)
	a := args(b, benchArgs)
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(benchArgs)); err != nil || compact.Len() < 900 {
		b.Fatalf("arguments are %d bytes of JSON (%v), want about 1 KiB", compact.Len(), err)
	}
	if ve := e.Validate(a, nil); ve != nil {
		b.Fatal(ve)
	}
	b.ReportAllocs()
	for b.Loop() {
		if e.Validate(a, nil) != nil {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkValidateInvalid(b *testing.B) {
	e := compileTool(b, benchSchema)
	a := args(b, `{"title":"t","board_id":"b","ops":"{\"op\":\"add\"}","priority":2.5}`)
	b.ReportAllocs()
	for b.Loop() {
		if e.Validate(a, nil) == nil {
			b.Fatal("valid")
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	s := memstore.New()
	defer s.Close()
	r := registry.New(s, registry.WithLogger(quietLogger()))
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Register(context.Background(), mkTool(b, "t", `{}`), registry.RegisterOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := r.Lookup("t"); !ok {
				b.Fatal("missing")
			}
		}
	})
}

// Compilation happens once per tool revision, off the hot path; this keeps
// its cost visible.
func BenchmarkCompile(b *testing.B) {
	tool := registry.Tool{Name: "t", Backend: "127.0.0.1:7001", InputSchema: schema(b, benchSchema)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := registry.Compile(tool); err != nil {
			b.Fatal(err)
		}
	}
}
