package normalize_test

import (
	"fmt"

	"github.com/flowdrop/gateway/normalize"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

func ExampleCompile() {
	schema, _ := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"ops":   map[string]any{"type": "array"},
			"title": map[string]any{"type": "string"},
		},
	})
	plan, err := normalize.Compile(schema)
	if err != nil {
		panic(err)
	}
	fmt.Printf("ops: %q, title: %q\n", plan.Declared("ops"), plan.Declared("title"))

	_, err = normalize.CompileJSON([]byte(`{"properties":{"p":{"$ref":"#/$defs/missing"}}}`))
	fmt.Println(err)
	// Output:
	// ops: "array", title: ""
	// normalize: schema /properties/p/$ref: $ref "#/$defs/missing" does not resolve: no member "$defs"
}

func ExamplePlan_Apply() {
	plan, err := normalize.CompileJSON([]byte(`{"properties":{"ops":{"type":"array"},"title":{"type":"string"},"cfg":{"type":"object"}}}`))
	if err != nil {
		panic(err)
	}
	var args structpb.Struct
	_ = protojson.Unmarshal([]byte(`{
		"ops":   "[{\"op\":\"add\",\"note\":\"a &amp;amp; b\"}]",
		"title": "Ember &amp;amp; Oak",
		"cfg":   "[1,2]"
	}`), &args)

	out, report := plan.Apply(&args)
	fmt.Println(out.Fields["title"].GetStringValue())
	fmt.Println(out.Fields["ops"].GetListValue().Values[0].GetStructValue().Fields["note"].GetStringValue())
	for _, r := range report.Repairs {
		fmt.Println("repaired", r.Path, r.Kind, r.Passes)
	}
	for _, s := range report.Skipped {
		fmt.Printf("left as sent %s: declared %s, %s (got %s)\n", s.Path, s.Declared, s.Reason, s.Got)
	}
	// Output:
	// Ember & Oak
	// a & b
	// repaired /ops json-decoded 0
	// repaired /ops/0/note entities-decoded 2
	// repaired /title entities-decoded 2
	// left as sent /cfg: declared object, wrong-shape (got array)
}
