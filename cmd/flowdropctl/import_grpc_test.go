package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/flowdrop/gateway/internal/notestest"
)

func ctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// changedNotesSet is the NotesService's descriptor set with
// CreateNoteRequest.title turned from a string into a bool: a request
// message changed incompatibly.
func changedNotesSet(t *testing.T) []byte {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(notestest.DescriptorSet(), set); err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, f := range set.GetFile() {
		for _, m := range f.GetMessageType() {
			if m.GetName() != "CreateNoteRequest" {
				continue
			}
			for _, fd := range m.GetField() {
				if fd.GetName() == "title" {
					fd.Type = descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum()
					changed = true
				}
			}
		}
	}
	if !changed {
		t.Fatal("no CreateNoteRequest.title in the descriptor set")
	}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeTempFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolsImportGRPC(t *testing.T) {
	notes := notestest.Start(t, true)
	gw := startRegistryGateway(t)

	// From reflection: one tool per unary method, names on stdout, the
	// streaming method skipped with its reason on stderr.
	code, out, errOut := ctl(t, "tools", "import", "grpc", "--target", notes.Addr, "--prefix", "notes.", "--addr", gw)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	if want := "notes.NotesService.CreateNote\nnotes.NotesService.GetNote\nnotes.NotesService.Ping\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if !strings.Contains(errOut, "skipped /flowdrop.testing.v1.NotesService/WatchNotes: a streaming method") {
		t.Errorf("stderr %q: want the streaming method skipped with its reason", errOut)
	}

	cases := []struct {
		name, reason string
		args         []string
		wantCode     int
		wantOut      []string
		wantErr      []string
	}{
		{name: "dry-run-protoset", reason: "--dry-run prints the tools as JSON; a descriptor set with source info gives the method's comment as the description",
			args:     []string{"--protoset", "../../internal/protoschema/testdata/notes.binpb", "--method", "CreateNote", "--dry-run"},
			wantCode: 0, wantOut: []string{`"name":"NotesService.CreateNote"`, `"description":"CreateNote stores a note and returns it."`,
				`"method":"/flowdrop.testing.v1.NotesService/CreateNote"`, `"target":"` + notes.Addr + `"`}},
		{name: "compatible-reimport", reason: "the same request message re-imported with --require-compatible is admitted",
			args: []string{"--prefix", "notes.", "--method", "CreateNote", "--require-compatible"}, wantCode: 0,
			wantOut: []string{"notes.NotesService.CreateNote\n"}},
		{name: "incompatible-reimport", reason: "a changed request message (title: string → bool) re-imported with --require-compatible is refused naming the parameter",
			args:     []string{"--protoset", writeTempFile(t, "changed.binpb", changedNotesSet(t)), "--prefix", "notes.", "--method", "CreateNote", "--require-compatible"},
			wantCode: 1, wantErr: []string{"FailedPrecondition", "title", "narrowed"}},
		{name: "name-too-long", reason: "a name that does not fit the tool-name pattern is refused naming it, not mangled silently",
			args: []string{"--prefix", strings.Repeat("p", 50) + ".", "--dry-run"}, wantCode: 2, wantErr: []string{"does not fit", "NotesService.CreateNote"}},
		{name: "unknown-method", reason: "--method naming no method is refused",
			args: []string{"--method", "Nope", "--dry-run"}, wantCode: 2, wantErr: []string{`no method "Nope"`}},
		{name: "bad-target", reason: "the target is checked as the registry checks it",
			args: []string{"--target", "notes", "--dry-run"}, wantCode: 2, wantErr: []string{"--target"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"tools", "import", "grpc", "--target", notes.Addr, "--addr", gw}, tc.args...)
			code, out, errOut := ctl(t, args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d (%s)\nstdout %s\nstderr %s", code, tc.wantCode, tc.reason, out, errOut)
			}
			compact := out
			if strings.HasPrefix(out, "{") {
				var buf bytes.Buffer
				if err := json.Compact(&buf, []byte(out)); err != nil {
					t.Fatalf("dry-run output is not JSON: %v", err)
				}
				compact = buf.String()
			}
			for _, s := range tc.wantOut {
				if !strings.Contains(compact, s) {
					t.Errorf("stdout %s: want %q (%s)", compact, s, tc.reason)
				}
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q: want %q (%s)", errOut, s, tc.reason)
				}
			}
		})
	}
}
