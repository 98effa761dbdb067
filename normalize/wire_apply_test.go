package normalize

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

// applyBoth runs the general path (decode, ApplyWithin) and the wire path
// (ApplyWireWithin) on the same bytes and fails unless they agree: the same
// report, the same limit error, and arguments that encode to the same bytes.
func applyBoth(t interface {
	Helper()
	Fatalf(string, ...any)
}, p *Plan, b []byte, lim Limits) {
	t.Helper()
	var s structpb.Struct
	if err := proto.Unmarshal(b, &s); err != nil {
		t.Fatalf("test bytes do not decode: %v", err)
	}
	out, rep, err := p.ApplyWithin(&s, lim)
	wout, wrep, taken, werr := p.ApplyWireWithin(nil, b, lim)
	if !taken {
		t.Fatalf("ApplyWireWithin did not take a Struct with distinct keys (% x)", b)
	}
	if !reflect.DeepEqual(rep, wrep) {
		t.Fatalf("reports differ:\n general %+v\n    wire %+v", rep, wrep)
	}
	if !reflect.DeepEqual(err, werr) {
		t.Fatalf("errors differ: general %v, wire %v", err, werr)
	}
	if err != nil {
		return
	}
	if (out == &s) != (wout == nil) {
		t.Fatalf("general path changed=%v, wire path changed=%v", out != &s, wout != nil)
	}
	if wout == nil {
		return
	}
	var ws structpb.Struct
	if err := proto.Unmarshal(wout, &ws); err != nil {
		t.Fatalf("wire path's bytes do not decode: %v", err)
	}
	det := proto.MarshalOptions{Deterministic: true}
	g, _ := det.Marshal(out)
	w, _ := det.Marshal(&ws)
	if !bytes.Equal(g, w) {
		gj, _ := protojson.Marshal(out)
		wj, _ := protojson.Marshal(&ws)
		t.Fatalf("arguments differ:\n general %s\n    wire %s", gj, wj)
	}
}

// TestApplyWireEqualsApply holds the wire path equal to the general one on
// random arguments and random (often small) limits.
func TestApplyWireEqualsApply(t *testing.T) {
	for name, schema := range wireSchemas {
		p := mustPlan(t, schema)
		t.Run(name, rapid.MakeCheck(func(rt *rapid.T) {
			b, err := proto.Marshal(genStruct(rt, 0))
			if err != nil {
				rt.Fatal(err)
			}
			small := rapid.IntRange(0, 12)
			lim := Limits{}
			if rapid.Bool().Draw(rt, "limited") {
				lim = Limits{MaxBytes: small.Draw(rt, "bytes") * 4, MaxStringLength: small.Draw(rt, "str"),
					MaxDepth: small.Draw(rt, "depth"), MaxElements: small.Draw(rt, "elems"), MaxKeys: small.Draw(rt, "keys")}
			}
			applyBoth(rt, p, b, lim)
		}))
	}
}

// TestApplyWireGolden runs every golden case through both paths.
func TestApplyWireGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var gc goldenCase
			if err := json.Unmarshal(raw, &gc); err != nil {
				t.Fatal(err)
			}
			p, err := CompileJSON(gc.Schema)
			if err != nil {
				t.Fatal(err)
			}
			var args structpb.Struct
			if err := protojson.Unmarshal(gc.Args, &args); err != nil {
				t.Fatal(err)
			}
			b, _ := proto.Marshal(&args)
			applyBoth(t, p, b, Limits{})
		})
	}
}

func TestApplyWireNotTaken(t *testing.T) {
	p := mustPlan(t, wireSchemas["properties"])
	member := func(key, val string) []byte {
		v, _ := proto.Marshal(structpb.NewStringValue(val))
		return appendEntry(nil, []byte(key), v)
	}
	tests := []struct {
		name   string
		raw    []byte
		reason string
	}{
		{name: "repeated key", raw: append(member("tags", `["a"]`), member("tags", `["b"]`)...),
			reason: "decoding keeps a repeated key's last value: the decoded path decides"},
		{name: "truncated", raw: member("tags", `["a"]`)[:6], reason: "bytes that do not read as a Struct"},
		{name: "unknown field", raw: protowire.AppendVarint(protowire.AppendTag(member("tags", "[]"), 2, protowire.VarintType), 1),
			reason: "a field Struct does not have"},
		{name: "bad utf8 key", raw: member("\xff", "x"), reason: "a key that is not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, taken, err := p.ApplyWireWithin(nil, tc.raw, Limits{})
			if taken || out != nil || err != nil || len(rep.Repairs)+len(rep.Skipped) > 0 {
				t.Errorf("ApplyWireWithin = %x, %+v, taken=%v, %v; want nothing taken (%s)", out, rep, taken, err, tc.reason)
			}
		})
	}
}

// TestApplyWireCopiesUntouchedMembers: members that need no repair go out
// as the very bytes they came in as; dst's contents are kept.
func TestApplyWireCopiesUntouchedMembers(t *testing.T) {
	p := mustPlan(t, wireSchemas["properties"])
	clean, _ := proto.Marshal(structpb.NewStringValue("Ember & Oak"))
	entity, _ := proto.Marshal(structpb.NewStringValue("Ember &amp; Oak"))
	in := append(appendEntry(nil, []byte("title"), clean), appendEntry(nil, []byte("count"), entity)...)
	out, rep, taken, err := p.ApplyWireWithin([]byte("head"), in, Limits{})
	if !taken || err != nil || len(rep.Repairs) != 1 || rep.Repairs[0].Path != "/count" {
		t.Fatalf("ApplyWireWithin: taken=%v err=%v report %+v", taken, err, rep)
	}
	if !bytes.HasPrefix(out, []byte("head")) {
		t.Fatalf("dst's bytes were not kept: %q", out)
	}
	if !bytes.Contains(out, appendEntry(nil, []byte("title"), clean)) {
		t.Errorf("the untouched member was not copied as sent")
	}
}

// BenchmarkRepairBytes compares the two ways a call's received bytes get
// repaired: decode whole, Apply, encode whole (general), and
// ApplyWireWithin (wire), on the 10-parameter arguments with a stringified
// array and a doubly-escaped title.
func BenchmarkRepairBytes(b *testing.B) {
	p := mustPlan(b, benchSchema)
	args := mustStruct(b, benchArgs)
	args.Fields["labels"] = structpb.NewStringValue(`["bug","normalize","P1","needs-triage"]`)
	args.Fields["title"] = structpb.NewStringValue("Ember &amp;amp; Oak")
	in, err := proto.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	applyBoth(b, p, in, Limits{})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s structpb.Struct
			if err := proto.Unmarshal(in, &s); err != nil {
				b.Fatal(err)
			}
			out, _, _ := p.ApplyWithin(&s, Limits{})
			if _, err := proto.Marshal(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if out, _, taken, _ := p.ApplyWireWithin(nil, in, Limits{}); !taken || out == nil {
				b.Fatal("not repaired on the wire")
			}
		}
	})
}
