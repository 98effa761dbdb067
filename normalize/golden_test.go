package normalize

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/golden/*.json from the current output")

// goldenCase is one file in testdata/golden: a tool schema, the arguments as
// a model sent them, and what normalization must make of them.
type goldenCase struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Args        json.RawMessage `json:"args"`
	Want        goldenWant      `json:"want"`
}

type goldenWant struct {
	Args    json.RawMessage `json:"args"`
	Repairs []goldenRepair  `json:"repairs"`
	Skipped []goldenSkip    `json:"skipped"`
}

type goldenRepair struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	Passes   int    `json:"passes,omitempty"`
	BoundHit bool   `json:"boundHit,omitempty"`
}

type goldenSkip struct {
	Path     string `json:"path"`
	Declared string `json:"declared"`
	Reason   string `json:"reason"`
	Got      string `json:"got,omitempty"`
}

func marshalNoEscape(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var gc goldenCase
			if err := json.Unmarshal(raw, &gc); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			p, err := CompileJSON(gc.Schema)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			var args structpb.Struct
			if err := protojson.Unmarshal(gc.Args, &args); err != nil {
				t.Fatalf("args: %v", err)
			}
			out, rep := p.Apply(&args)
			got := goldenWant{Args: json.RawMessage(bytes.TrimSpace(marshalNoEscape(out.AsMap()))), Repairs: []goldenRepair{}, Skipped: []goldenSkip{}}
			for _, r := range rep.Repairs {
				got.Repairs = append(got.Repairs, goldenRepair{Path: r.Path, Kind: r.Kind.String(), Passes: r.Passes, BoundHit: r.BoundHit})
			}
			for _, s := range rep.Skipped {
				got.Skipped = append(got.Skipped, goldenSkip{Path: s.Path, Declared: s.Declared, Reason: s.Reason.String(), Got: s.Got})
			}
			if *update {
				gc.Want = got
				if err := os.WriteFile(file, marshalNoEscape(gc), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			// Compare semantically, so the file's indentation does not matter.
			if g, w := canonAny(t, marshalNoEscape(got)), canonAny(t, marshalNoEscape(gc.Want)); g != w {
				t.Errorf("%s: normalization differs from the golden want (run go test ./normalize -run TestGolden -update to accept)\n got %s\nwant %s", file, g, w)
			}
		})
	}
}

func canonAny(t *testing.T, b []byte) string {
	t.Helper()
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(marshalNoEscape(x)))
}
