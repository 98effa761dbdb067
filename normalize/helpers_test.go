package normalize

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// mustStruct reads JSON as a google.protobuf.Struct, as the gateway receives it.
func mustStruct(t testing.TB, src string) *structpb.Struct {
	t.Helper()
	var s structpb.Struct
	if err := protojson.Unmarshal([]byte(src), &s); err != nil {
		t.Fatalf("bad test JSON %s: %v", src, err)
	}
	return &s
}

func mustPlan(t testing.TB, schema string, opts ...Option) *Plan {
	t.Helper()
	p, err := CompileJSON([]byte(schema), opts...)
	if err != nil {
		t.Fatalf("CompileJSON(%s): %v", schema, err)
	}
	return p
}

// canonJSON renders a Struct with sorted keys and without HTML escaping.
func canonJSON(t testing.TB, s *structpb.Struct) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.AsMap()); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

// canon re-renders a JSON text the same way canonJSON does.
func canon(t testing.TB, src string) string {
	t.Helper()
	return canonJSON(t, mustStruct(t, src))
}
