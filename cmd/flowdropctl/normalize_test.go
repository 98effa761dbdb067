package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNormalizeCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schema := write("schema.json", `{"type":"object","properties":{"ops":{"type":"array"},"cfg":{"type":"object"},"title":{"type":"string"}}}`)
	badRef := write("badref.json", `{"properties":{"p":{"$ref":"#/$defs/nope"}}}`)
	notJSON := write("broken.json", `{"properties": {`)
	arraySchema := write("array.json", `[{"type":"object"}]`)

	cases := []struct {
		reason     string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr []string // substrings, in order of appearance
		oneLineErr bool
	}{
		{
			reason:     "decodes a stringified array and entities, sorted keys, no HTML escaping",
			args:       []string{"normalize", "--schema", schema},
			stdin:      `{"title":"a &amp;amp; b","ops":"[{\"op\":\"add\"}]"}`,
			wantStdout: `{"ops":[{"op":"add"}],"title":"a & b"}` + "\n",
		},
		{
			reason:     "--report writes one line per repair and skip to stderr",
			args:       []string{"normalize", "--schema", schema, "--report"},
			stdin:      `{"title":"a &amp;amp; b","ops":"[{\"t\":\"&lt;\"}]","cfg":"[1]"}`,
			wantStdout: `{"cfg":"[1]","ops":[{"t":"<"}],"title":"a & b"}` + "\n",
			wantStderr: []string{"repair\t/ops\tjson-decoded\n", "repair\t/ops/0/t\tentities-decoded\tpasses=1\tbound-hit=false\n", "repair\t/title\tentities-decoded\tpasses=2\tbound-hit=false\n", "skipped\t/cfg\tdeclared=object\treason=wrong-shape\tgot=array\n"},
		},
		{
			reason:     "--max-passes bounds decoding and the report says the bound was hit",
			args:       []string{"normalize", "--schema", schema, "--report", "--max-passes", "1"},
			stdin:      `{"title":"&amp;amp;lt;"}`,
			wantStdout: `{"title":"&amp;lt;"}` + "\n",
			wantStderr: []string{"repair\t/title\tentities-decoded\tpasses=1\tbound-hit=true\n"},
		},
		{
			reason:     "arguments needing no repair come back equal",
			args:       []string{"normalize", "--schema", schema},
			stdin:      `{"ops":[1,2],"title":"Q&A"}`,
			wantStdout: `{"ops":[1,2],"title":"Q&A"}` + "\n",
		},
		{
			reason:     "missing --schema is a usage error",
			args:       []string{"normalize"},
			stdin:      `{}`,
			wantCode:   2,
			wantStderr: []string{"--schema FILE is required"},
			oneLineErr: true,
		},
		{
			reason:     "unreadable schema file names the file",
			args:       []string{"normalize", "--schema", filepath.Join(dir, "missing.json")},
			stdin:      `{}`,
			wantCode:   2,
			wantStderr: []string{"schema " + filepath.Join(dir, "missing.json") + ": no such file or directory"},
			oneLineErr: true,
		},
		{
			reason:     "schema that is not JSON names the file and the offset",
			args:       []string{"normalize", "--schema", notJSON},
			stdin:      `{}`,
			wantCode:   2,
			wantStderr: []string{"schema " + notJSON + ": invalid JSON at byte offset 16"},
			oneLineErr: true,
		},
		{
			reason:     "schema that is not an object",
			args:       []string{"normalize", "--schema", arraySchema},
			stdin:      `{}`,
			wantCode:   2,
			wantStderr: []string{"schema " + arraySchema + ": want a JSON object, got an array"},
			oneLineErr: true,
		},
		{
			reason:     "schema that does not compile names the pointer",
			args:       []string{"normalize", "--schema", badRef},
			stdin:      `{}`,
			wantCode:   2,
			wantStderr: []string{"schema " + badRef + ":", "/properties/p/$ref"},
			oneLineErr: true,
		},
		{
			reason:     "stdin with a syntax error gives the byte offset",
			args:       []string{"normalize", "--schema", schema},
			stdin:      `{"ops": [1,}`,
			wantCode:   2,
			wantStderr: []string{"stdin: invalid JSON at byte offset 12"},
			oneLineErr: true,
		},
		{
			reason:     "stdin truncated",
			args:       []string{"normalize", "--schema", schema},
			stdin:      `{"ops": [1,`,
			wantCode:   2,
			wantStderr: []string{"stdin: invalid JSON at byte offset 11: unexpected end of input"},
			oneLineErr: true,
		},
		{
			reason:     "stdin that is an array, not an object",
			args:       []string{"normalize", "--schema", schema},
			stdin:      `[1,2]`,
			wantCode:   2,
			wantStderr: []string{"stdin: want a JSON object, got an array"},
			oneLineErr: true,
		},
		{
			reason:     "empty stdin",
			args:       []string{"normalize", "--schema", schema},
			stdin:      ``,
			wantCode:   2,
			wantStderr: []string{"stdin: empty input"},
			oneLineErr: true,
		},
		{
			reason:     "trailing data after the object",
			args:       []string{"normalize", "--schema", schema},
			stdin:      `{} {}`,
			wantCode:   2,
			wantStderr: []string{"stdin: invalid JSON at byte offset", "data after the JSON object"},
			oneLineErr: true,
		},
		{
			reason:     "--max-passes 0 is refused",
			args:       []string{"normalize", "--schema", schema, "--max-passes", "0"},
			stdin:      `{}`,
			wantCode:   2,
			wantStderr: []string{"--max-passes must be at least 1, got 0"},
			oneLineErr: true,
		},
		{
			reason:     "unknown subcommand",
			args:       []string{"normalise"},
			wantCode:   2,
			wantStderr: []string{`unknown command "normalise"`},
			oneLineErr: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			if stdout.String() != tc.wantStdout {
				t.Errorf("stdout = %q, want %q", stdout.String(), tc.wantStdout)
			}
			rest := stderr.String()
			for _, w := range tc.wantStderr {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stderr %q lacks %q (in order)", stderr.String(), w)
				}
				rest = rest[i+len(w):]
			}
			if tc.oneLineErr && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("error is not exactly one line: %q", stderr.String())
			}
		})
	}
}
