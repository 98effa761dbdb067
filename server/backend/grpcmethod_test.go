package backend

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestRequestMessageIsStrict: arguments become the request message as
// protojson reads JSON strictly, whatever schema the tool was registered
// with: what does not fit is InvalidArgument naming the field, never
// quoting the value (it may be sensitive).
func TestRequestMessageIsStrict(t *testing.T) {
	md := (&testingv1.CreateNoteRequest{}).ProtoReflect().Descriptor()
	cases := []struct {
		name, reason string
		args         map[string]any
		wantIn       string
		wantNotIn    string
	}{
		{name: "unknown-field", reason: "a field the message does not have is refused by name",
			args: map[string]any{"title": "t", "colour": "red"}, wantIn: `unknown field "colour"`, wantNotIn: "red"},
		{name: "bad-int64", reason: "a value protojson cannot read names the field, not the value",
			args: map[string]any{"authorId": "12-secret-34"}, wantIn: "field authorId", wantNotIn: "secret"},
		{name: "bad-enum", reason: "an enum name the enum does not have",
			args: map[string]any{"priority": "PRIORITY_URGENT_hush"}, wantIn: "field priority", wantNotIn: "hush"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, err := structpb.NewStruct(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			_, err = requestMessage("notes.create", md, args)
			var pe *pipeline.Error
			if !errors.As(err, &pe) || pe.Code != pipeline.InvalidArgument || pe.Kind != pipeline.KindValidation {
				t.Fatalf("requestMessage: %v, want an InvalidArgument validation error (%s)", err, tc.reason)
			}
			if !strings.Contains(pe.Message, tc.wantIn) || strings.Contains(pe.Message, tc.wantNotIn) || !strings.Contains(pe.Message, `tool "notes.create"`) {
				t.Errorf("message %q: want the tool and %q, not %q (%s)", pe.Message, tc.wantIn, tc.wantNotIn, tc.reason)
			}
		})
	}
	ok, err := structpb.NewStruct(map[string]any{"title": "t", "authorId": "9007199254740993"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := requestMessage("notes.create", md, ok)
	if err != nil {
		t.Fatalf("valid arguments refused: %v", err)
	}
	if got := m.Get(md.Fields().ByName("author_id")).Int(); got != 9007199254740993 {
		t.Errorf("author_id = %d, want 2^53+1 exactly", got)
	}
}
