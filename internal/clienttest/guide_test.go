package clienttest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	fencedBlock = regexp.MustCompile("(?ms)^```(js|python)\n(.*?)^```")
	jsImports   = regexp.MustCompile(`(?ms)^import \{([^}]*)\} from "([^"]+)";`)
	pyImports   = regexp.MustCompile(`(?m)^from ([\w.]+) import ([\w, ]+)`)
	jsFields    = regexp.MustCompile(`(?m)^\s+(\w+): [^/]`)
	pyFields    = regexp.MustCompile(`(?m)^\s+(\w+)=`)
)

// imported maps each module to the names imported from it.
func imported(re *regexp.Regexp, src string, moduleFirst bool) map[string][]string {
	out := map[string][]string{}
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		mod, names := m[2], m[1]
		if moduleFirst {
			mod, names = m[1], m[2]
		}
		for _, n := range strings.Split(names, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out[mod] = append(out[mod], n)
			}
		}
	}
	return out
}

// TestAgentsGuideGRPCExcerptsMatchTheRunScripts: the TypeScript and Python
// gRPC examples of docs/agents.md are excerpts of the scripts this package
// runs against a real gateway (tools/ts/invoke_tool_call.mjs,
// tools/python/invoke_tool_call.py): every name an excerpt imports, the
// script imports from the same module, and every request field it sets, the
// script sets — so an excerpt cannot drift to an API the tests do not run.
func TestAgentsGuideGRPCExcerptsMatchTheRunScripts(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs/agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ts, py := read("tools/ts/invoke_tool_call.mjs"), read("tools/python/invoke_tool_call.py")
	checked := map[string]int{}
	for _, m := range fencedBlock.FindAllStringSubmatch(string(guide), -1) {
		lang, code := m[1], m[2]
		if lang == "js" && !strings.Contains(code, "createGrpcTransport") {
			continue // an agent SDK's example: internal/mcpclienttest runs those
		}
		script, imports, fields, moduleFirst := ts, jsImports, jsFields, false
		if lang == "python" {
			script, imports, fields, moduleFirst = py, pyImports, pyFields, true
		}
		have := imported(imports, script, moduleFirst)
		for mod, names := range imported(imports, code, moduleFirst) {
			for _, n := range names {
				if !slices.Contains(have[mod], n) {
					t.Errorf("docs/agents.md's %s example imports %s from %s; the tested script does not", lang, n, mod)
				}
			}
		}
		for _, f := range fields.FindAllStringSubmatch(code, -1) {
			if !regexp.MustCompile(`(?m)^\s+` + f[1] + `[:=]`).MatchString(script) {
				t.Errorf("docs/agents.md's %s example sets %s; the tested script does not", lang, f[1])
			}
		}
		checked[lang]++
	}
	if checked["js"] != 1 || checked["python"] < 1 {
		t.Errorf("found %v gRPC examples in docs/agents.md, want the TypeScript one and the Python ones", checked)
	}
}
