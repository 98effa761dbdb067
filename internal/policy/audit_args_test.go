package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// formerArgsJSON is how audit lines carried the arguments before the
// direct encoder: protojson of the redacted copy, compacted (HTML-escaped)
// by encoding/json as a RawMessage field.
func formerArgsJSON(t *testing.T, red *Redactor, s *structpb.Struct) string {
	t.Helper()
	b, err := protojson.Marshal(red.Redact(s))
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(struct {
		A json.RawMessage `json:"a"`
	}{b})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(line), `{"a":`), "}")
}

// TestAuditArgsEncodingMatchesFormerPath holds the direct encoder (one
// buffer, redaction while encoding, no re-scan) to the exact bytes the
// protojson path wrote, so the audit format does not change.
func TestAuditArgsEncodingMatchesFormerPath(t *testing.T) {
	sensitive := NewRedactor(mustStruct(t, sensitiveSchema))
	plain := NewRedactor(mustStruct(t, `{"type":"object","properties":{"title":{"type":"string"}}}`))
	cases := []struct {
		name, reason, args string
		red                *Redactor
	}{
		{"scalars", "every kind, keys out of order", `{"z":null,"b":true,"f":false,"n":1,"s":"x","a":[]}`, plain},
		{"numbers", "float64 formatting at the f/e boundaries and exponent cleanup", `{"a":0,"b":-0.5,"c":1e21,"d":1e-7,"e":123456789012345678,"f":0.000001,"g":-1.5e300,"h":3.14159}`, plain},
		{"escapes", "quotes, backslash, control bytes, HTML characters, U+2028/9 and non-ASCII", `{"s":"q\" b\\ \b\f\n\r\t \u0001\u001f <a href=x>&amp; \u2028\u2029 é 漢 😀 \u007f"}`, plain},
		{"keys escaped", "member names take the same escaping", `{"<k>":1,"a\"b":2,"\n":3}`, plain},
		{"nested", "objects in lists in objects", `{"o":{"l":[{"x":[1,[2,{}]]},"s"],"e":{}}}`, plain},
		{"nil redactor", "no schema knowledge: nothing redacted", `{"password":"p","x":[1]}`, nil},
		{"redacted", "marked fields, $ref, nested, array items, pattern properties, a string standing for an object with a secret", `{"user":"u","password":"p","token":"t","apiKey":"k","db":{"host":"h","pass":"s"},"accounts":[{"name":"n","pin":"1"},{"pin":"2"}],"creds":"{\"secret\":\"x\"}","x-secret-a":{"deep":1},"note":"a &amp;&amp; b"}`, sensitive},
		{"redacted other kinds", "a marked field holding a number, object or list is redacted whole", `{"password":12,"token":{"a":1},"apiKey":[1,2]}`, sensitive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sent := mustStruct(t, tc.args)
			repaired := mustStruct(t, tc.args)
			repaired.Fields["extra"] = structpb.NewStringValue("r")
			var rec AuditRecord
			if err := rec.SetArgs(tc.red, sent, repaired); err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if got, want := string(rec.ArgsSent), formerArgsJSON(t, tc.red, sent); got != want {
				t.Errorf("%s: args_sent\n got %s\nwant %s", tc.reason, got, want)
			}
			if got, want := string(rec.ArgsRepaired), formerArgsJSON(t, tc.red, repaired); got != want {
				t.Errorf("%s: args_repaired\n got %s\nwant %s", tc.reason, got, want)
			}
			// The same arguments as received wire bytes, in both
			// encoders' orders, and with a repeated key (decoding keeps
			// the last value).
			for _, opt := range []proto.MarshalOptions{{}, {Deterministic: true}} {
				wire, err := opt.Marshal(sent)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := proto.Marshal(&structpb.Struct{Fields: map[string]*structpb.Value{"note": structpb.NewStringValue("<last>")}})
				wire = append(wire, again...)
				decoded := new(structpb.Struct)
				if err := proto.Unmarshal(wire, decoded); err != nil {
					t.Fatal(err)
				}
				var fromWire, fromStruct AuditRecord
				if err := fromWire.SetArgsWire(tc.red, wire, nil); err != nil {
					t.Fatalf("%s: from the wire: %v", tc.reason, err)
				}
				if err := fromStruct.SetArgs(tc.red, decoded, nil); err != nil {
					t.Fatal(err)
				}
				if string(fromWire.ArgsSent) != string(fromStruct.ArgsSent) || fromWire.ArgsRepaired != nil {
					t.Errorf("%s: from the wire\n got %s\nwant %s", tc.reason, fromWire.ArgsSent, fromStruct.ArgsSent)
				}
				// As sent and as repaired, both from the wire.
				repairedWire, err := opt.Marshal(repaired)
				if err != nil {
					t.Fatal(err)
				}
				var both AuditRecord
				if err := both.SetArgsWire(tc.red, wire, repairedWire); err != nil {
					t.Fatalf("%s: sent and repaired from the wire: %v", tc.reason, err)
				}
				if string(both.ArgsSent) != string(fromStruct.ArgsSent) || string(both.ArgsRepaired) != string(rec.ArgsRepaired) {
					t.Errorf("%s: sent and repaired from the wire\n got %s / %s\nwant %s / %s", tc.reason,
						both.ArgsSent, both.ArgsRepaired, fromStruct.ArgsSent, rec.ArgsRepaired)
				}
			}
			line, err := rec.line()
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(bytes.TrimSpace(line)) || !bytes.HasSuffix(line, []byte("}\n")) {
				t.Errorf("%s: spliced line is not one JSON object and a newline: %s", tc.reason, line)
			}
		})
	}
}

// TestAuditArgsWireRefusesMalformed: bytes that are not a Struct give no
// arguments rather than a guess.
func TestAuditArgsWireRefusesMalformed(t *testing.T) {
	cases := []struct {
		name, reason string
		wire         []byte
	}{
		{"truncated", "an entry's length runs past the end", []byte{0x0a, 0x10, 0x0a}},
		{"unknown field", "field 2 is not Struct's", []byte{0x12, 0x00}},
		{"two kinds", "a Value with a string and a bool", []byte{0x0a, 0x09, 0x0a, 0x01, 'k', 0x12, 0x04, 0x1a, 0x00, 0x20, 0x01}},
	}
	for _, tc := range cases {
		var rec AuditRecord
		if err := rec.SetArgsWire(nil, tc.wire, nil); err == nil {
			t.Errorf("%s: %s: encoded %s; want an error", tc.name, tc.reason, rec.ArgsSent)
		}
	}
}

// TestAuditArgsUnencodable: values protojson refuses leave the line
// without arguments (as before), never with broken JSON.
func TestAuditArgsUnencodable(t *testing.T) {
	cases := []struct {
		name, reason string
		v            *structpb.Value
	}{
		{"nan", "JSON has no NaN", structpb.NewNumberValue(math.NaN())},
		{"inf", "JSON has no infinity", structpb.NewNumberValue(math.Inf(-1))},
		{"no kind", "a Value with no kind set", &structpb.Value{}},
		{"bad utf-8", "a string that is not UTF-8", &structpb.Value{Kind: &structpb.Value_StringValue{StringValue: "a\xffb"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := protojson.Marshal(&structpb.Struct{Fields: map[string]*structpb.Value{"v": tc.v}}); err == nil {
				t.Fatalf("%s: protojson accepts it; the case is wrong", tc.reason)
			}
			args := &structpb.Struct{Fields: map[string]*structpb.Value{"v": tc.v}}
			var rec AuditRecord
			if err := rec.SetArgs(nil, args, nil); err == nil {
				t.Errorf("%s: encoded %s; want an error", tc.reason, rec.ArgsSent)
			}
			wire, _ := proto.MarshalOptions{AllowPartial: true}.Marshal(args)
			if err := rec.SetArgsWire(nil, wire, nil); err == nil || rec.ArgsSent != nil {
				t.Errorf("%s: from the wire: encoded %s; want an error", tc.reason, rec.ArgsSent)
			}
		})
	}
}
