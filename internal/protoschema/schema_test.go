package protoschema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
	"github.com/flowdrop/gateway/internal/protoschema"
	"github.com/flowdrop/gateway/registry/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// descriptorSet reads testdata/notes.binpb, built with source info by
//
//	go tool -modfile=tools/buf/go.mod buf build --path proto/flowdrop/testing/v1/notes.proto -o internal/protoschema/testdata/notes.binpb
//
// (TestDescriptorSetIsCurrent fails when it falls behind the .proto).
func descriptorSet(t *testing.T) *protoregistry.Files {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "notes.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func messageIn(t *testing.T, files *protoregistry.Files, name protoreflect.FullName) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := files.FindDescriptorByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.MessageDescriptor)
}

func indentJSON(t *testing.T, s *structpb.Struct) []byte {
	t.Helper()
	b, err := json.MarshalIndent(s.AsMap(), "", "  ") // encoding/json sorts map keys
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestGolden: the schemas of the test service's requests, from the
// descriptor set (with comments as descriptions). `go test
// ./internal/protoschema -update` rewrites them; review the diff.
func TestGolden(t *testing.T) {
	files := descriptorSet(t)
	for _, row := range []struct {
		message protoreflect.FullName
		reason  string
	}{
		{"flowdrop.testing.v1.CreateNoteRequest", "every shape of the proto3 JSON mapping, a oneof, a recursive message, comments"},
		{"flowdrop.testing.v1.PingRequest", "a request with no fields is an empty object and nothing else"},
		{"flowdrop.testing.v1.Section", "a root message that contains itself refers to the root (#)"},
	} {
		t.Run(string(row.message), func(t *testing.T) {
			s, err := protoschema.Schema(messageIn(t, files, row.message))
			if err != nil {
				t.Fatalf("%s: %v", row.reason, err)
			}
			got := indentJSON(t, s)
			path := filepath.Join("testdata", string(row.message)+".schema.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: schema differs from %s (run with -update and review the diff):\n%s", row.reason, path, got)
			}
		})
	}
}

// TestDescriptorSetIsCurrent: the committed descriptor set describes the
// same messages as the generated code (which comes from the .proto).
func TestDescriptorSetIsCurrent(t *testing.T) {
	files := descriptorSet(t)
	fromSet, err := files.FindFileByPath("flowdrop/testing/v1/notes.proto")
	if err != nil {
		t.Fatal(err)
	}
	a := protodesc.ToFileDescriptorProto(fromSet)
	b := protodesc.ToFileDescriptorProto(testingv1.File_flowdrop_testing_v1_notes_proto)
	a.SourceCodeInfo = nil
	if !proto.Equal(a, b) {
		t.Fatal("testdata/notes.binpb is stale: rebuild it with the command in descriptorSet's comment")
	}
}

// TestSchemaJudgesWhatProtojsonReads holds the schema to protojson: every
// row's arguments are valid under the derived schema exactly when protojson
// (strict: unknown fields refused) reads them into the request message.
func TestSchemaJudgesWhatProtojsonReads(t *testing.T) {
	files := descriptorSet(t)
	md := messageIn(t, files, "flowdrop.testing.v1.CreateNoteRequest")
	doc, err := protoschema.Schema(md)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := schema.Compile(doc)
	if err != nil {
		t.Fatalf("the derived schema does not compile: %v", err)
	}
	for _, row := range []struct {
		args   string
		valid  bool
		reason string
	}{
		{`{}`, true, "no field set: every proto3 field is optional"},
		{`{"title":"t","tags":["a","b"],"pinned":true,"score":1.5,"weight":2}`, true, "scalars, a repeated string, proto3 optional"},
		{`{"authorId":"9007199254740993"}`, true, "an int64 above 2^53 as a decimal string"},
		{`{"authorId":42}`, true, "an int64 as a (safe) integer"},
		{`{"authorId":"12a"}`, false, "an int64 string that is not a decimal"},
		{`{"checksum":"18446744073709551615"}`, true, "the largest uint64 as a string"},
		{`{"checksum":-1}`, false, "a negative uint64"},
		{`{"revision":4294967296}`, false, "a uint32 out of range"},
		{`{"priority":"PRIORITY_HIGH"}`, true, "an enum by name"},
		{`{"priority":"HIGH"}`, false, "an enum name the enum does not have"},
		{`{"labels":{"k":"v"}}`, true, "a map<string,string>"},
		{`{"sectionsByNumber":{"7":{"heading":"h"}}}`, true, "a map with int32 keys (decimal strings) and message values"},
		{`{"sectionsByNumber":{"x":{"heading":"h"}}}`, false, "an int32 map key that is not a decimal"},
		{`{"attachment":"aGVsbG8="}`, true, "bytes as base64"},
		{`{"due":"2026-12-03T10:00:00Z","remindBefore":"1.5s"}`, true, "Timestamp and Duration by their JSON form"},
		{`{"remindBefore":"90"}`, false, "a Duration without its s suffix"},
		{`{"maxViews":3}`, true, "a wrapper by its value"},
		{`{"maxViews":null}`, true, "a wrapper's null: not set"},
		{`{"extra":{"a":[1,{"b":null}]},"anything":[1,"x"],"items":[true]}`, true, "Struct, Value and ListValue take any JSON of their kind"},
		{`{"updateMask":"title,tags"}`, true, "a FieldMask as its string form"},
		{`{"nothing":null}`, true, "NullValue is null"},
		{`{"team":"core"}`, true, "one field of a oneof"},
		{`{"team":"core","user":"ann"}`, false, "two fields of one oneof"},
		{`{"sections":[{"heading":"a","children":[{"heading":"b","children":[]}]}]}`, true, "a recursive message, nested"},
		{`{"sections":[{"heading":"a","children":[{"title":"b"}]}]}`, false, "an unknown field inside the recursive message"},
		{`{"titel":"t"}`, false, "an unknown field (strict protojson refuses it)"},
		{`{"tags":"a"}`, false, "a string for a repeated field"},
	} {
		t.Run(row.reason, func(t *testing.T) {
			var args structpb.Struct
			if err := protojson.Unmarshal([]byte(row.args), &args); err != nil {
				t.Fatal(err)
			}
			verr := compiled.Validate(&args, nil)
			perr := protojson.Unmarshal([]byte(row.args), dynamicpb.NewMessage(md))
			if (verr == nil) != row.valid {
				t.Errorf("%s: schema validation of %s = %v; want valid=%v", row.reason, row.args, verr, row.valid)
			}
			if (perr == nil) != row.valid {
				t.Errorf("%s: protojson reading %s = %v; want accepted=%v (the row is wrong, or protojson disagrees)", row.reason, row.args, perr, row.valid)
			}
		})
	}
}

// fileWith builds a one-message file whose message has the given fields.
func fileWith(t *testing.T, deps []string, fields ...*descriptorpb.FieldDescriptorProto) protoreflect.MessageDescriptor {
	t.Helper()
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("x/v1/x.proto"), Package: proto.String("x.v1"), Syntax: proto.String("proto3"),
		Dependency:  deps,
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Req"), Field: fields}},
	}
	f, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return f.Messages().ByName("Req")
}

// TestAnyIsRefusedNamingTheField: google.protobuf.Any's JSON shape depends
// on a type URL, so no schema describes it; the import names the field.
func TestAnyIsRefusedNamingTheField(t *testing.T) {
	md := fileWith(t, []string{"google/protobuf/any.proto"}, &descriptorpb.FieldDescriptorProto{
		Name: proto.String("payload"), Number: proto.Int32(1), JsonName: proto.String("payload"),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
		TypeName: proto.String(".google.protobuf.Any"),
	})
	_, err := protoschema.Schema(md)
	var ue *protoschema.UnsupportedError
	if !errors.As(err, &ue) || ue.Path != "x.v1.Req.payload" || !strings.Contains(err.Error(), "google.protobuf.Any") {
		t.Fatalf("Schema with an Any field = %v; want an *UnsupportedError naming x.v1.Req.payload and Any", err)
	}
}

// TestFieldBehaviorRequired: google.api.field_behavior = REQUIRED (read
// from the options' wire form; the extension is not linked in) makes the
// field required, packed or not; other behaviours do not.
func TestFieldBehaviorRequired(t *testing.T) {
	withBehavior := func(name string, raw []byte) *descriptorpb.FieldDescriptorProto {
		opts := &descriptorpb.FieldOptions{}
		opts.ProtoReflect().SetUnknown(raw)
		return &descriptorpb.FieldDescriptorProto{
			Name: proto.String(name), Number: proto.Int32(int32(len(name))), JsonName: proto.String(name),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
			Options: opts,
		}
	}
	// Tag 1052: varint (wire type 0) is 0xe0 0x41; length-delimited (2) is 0xe2 0x41.
	md := fileWith(t, nil,
		withBehavior("a", []byte{0xe0, 0x41, 0x02}),              // REQUIRED
		withBehavior("bb", []byte{0xe2, 0x41, 0x02, 0x03, 0x02}), // packed [OUTPUT_ONLY, REQUIRED]
		withBehavior("ccc", []byte{0xe0, 0x41, 0x01}),            // OPTIONAL
	)
	s, err := protoschema.Schema(md)
	if err != nil {
		t.Fatal(err)
	}
	got := s.GetFields()["required"].GetListValue().AsSlice()
	if len(got) != 2 || got[0] != "a" || got[1] != "bb" {
		t.Fatalf("required = %v; want [a bb]", got)
	}
}
