package schema

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestValidateRefusesNonFinite: NaN and ±Infinity are refused wherever
// they are — constrained or not, nested in objects and lists — with the
// pointer of each, and the wire check never passes them to the fast path.
func TestValidateRefusesNonFinite(t *testing.T) {
	e := fastEntry(t, `{"type":"object","properties":{"n":{"type":"number"},"free":{}}}`)
	num := structpb.NewNumberValue
	args := &structpb.Struct{Fields: map[string]*structpb.Value{
		"n":    num(1),
		"free": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{num(2), structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"a/b": num(math.Inf(-1))}})}}),
		"x":    num(math.NaN()),
	}}
	err := e.Validate(args, nil)
	if err == nil {
		t.Fatal("arguments with NaN and -Inf accepted")
	}
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("error %T %v, want *ValidationError", err, err)
	}
	got := map[string]string{}
	for _, v := range ve.Violations {
		got[v.Pointer] = v.Message
	}
	for ptr, want := range map[string]string{"/x": "`x` must be a finite number; got NaN", "/free/1/a~1b": "`free[1].a/b` must be a finite number; got -Inf"} {
		if msg, ok := got[ptr]; !ok || !strings.HasPrefix(msg, want) {
			t.Errorf("violation at %s = %q, want it to start %q; all: %v", ptr, msg, want, ve.Violations)
		}
	}
	if len(ve.Violations) != 2 {
		t.Errorf("violations = %v, want exactly the two non-finite numbers", ve.Violations)
	}

	b, err := proto.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if e.FastValidWire(b) {
		t.Error("FastValidWire passes a NaN: the raw path would forward it")
	}
	finiteOnly := &structpb.Struct{Fields: map[string]*structpb.Value{"n": num(1), "free": num(math.MaxFloat64)}}
	if ve := e.Validate(finiteOnly, nil); ve != nil {
		t.Errorf("finite numbers refused: %v", ve)
	}
}
