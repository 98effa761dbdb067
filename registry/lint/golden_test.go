package lint

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// caseFile is one testdata/cases/*.json tool: a real schema that broke a client.
type caseFile struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

func loadCase(t *testing.T, path string) (string, *structpb.Struct) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c caseFile
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s, err := structpb.NewStruct(c.InputSchema)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c.Name, s
}

// TestGolden lints every case under all profiles and compares the rendered
// findings with testdata/golden/<case>.txt. Run with -update to rewrite.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "cases", "*.json"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range cases {
		base := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(base, func(t *testing.T) {
			name, schema := loadCase(t, path)
			var b strings.Builder
			for _, f := range Lint(name, schema) {
				b.WriteString(f.String())
				b.WriteByte('\n')
			}
			golden := filepath.Join("testdata", "golden", base+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("findings differ from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}
