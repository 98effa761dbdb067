package mcpclienttest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// guideSnippet is one JavaScript example of docs/agents.md.
type guideSnippet struct {
	code    string
	client  agentClient
	imports map[string][]string // module → the names the snippet imports from it
}

var (
	jsBlock     = regexp.MustCompile("(?ms)^```js\n(.*?)^```")
	snippetHead = regexp.MustCompile(`^// .*?(@[\w.-]+/[\w.-]+) (\d+\.\d+\.\d+)`)
	jsImport    = regexp.MustCompile(`(?m)^import \{([^}]*)\} from "([^"]+)";`)
)

// agentSnippets returns the guide's examples that name an agent SDK in
// their first line, each with the client the tests pin for that package.
func agentSnippets(t *testing.T) []guideSnippet {
	t.Helper()
	b, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []guideSnippet
	for _, m := range jsBlock.FindAllStringSubmatch(string(b), -1) {
		head := snippetHead.FindStringSubmatch(m[1])
		if head == nil {
			continue // not an agent SDK's example (the gRPC client's is run by internal/clienttest)
		}
		s := guideSnippet{code: m[1], imports: map[string][]string{}}
		found := false
		for _, c := range agentClients {
			if c.pkg == head[1] {
				s.client, found = c, true
			}
		}
		if !found {
			t.Errorf("docs/agents.md has an example for %s, which tools/mcpclients does not pin", head[1])
			continue
		}
		if head[2] != s.client.version {
			t.Errorf("docs/agents.md's %s example names version %s; the tests pin %s", head[1], head[2], s.client.version)
		}
		for _, im := range jsImport.FindAllStringSubmatch(m[1], -1) {
			for _, name := range strings.Split(im[1], ",") {
				s.imports[im[2]] = append(s.imports[im[2]], strings.TrimSpace(name))
			}
		}
		out = append(out, s)
	}
	return out
}

// TestAgentsGuideSnippetsRun runs each agent SDK example of docs/agents.md
// as written — only the demo's URL replaced by a test gateway's — with the
// pinned SDK, against a gateway requiring the API key the snippets send.
// An example that calls create_note must reach the backend with the
// arguments repaired. The OpenAI Agents example needs a model (run(agent,
// …) asks OpenAI), so it is checked for what can be without one: every name
// it imports is exported by the pinned package. Every agent SDK the tests
// pin has an example.
func TestAgentsGuideSnippetsRun(t *testing.T) {
	node := nodeBinary(t)
	snippets := agentSnippets(t)
	covered := map[string]bool{}
	for _, s := range snippets {
		covered[s.client.pkg] = true
	}
	for _, c := range agentClients {
		if !covered[c.pkg] {
			t.Errorf("docs/agents.md has no example for %s", c.pkg)
		}
	}
	key := rand.Text()
	env := startGateway(t, gatewaytest.WithPolicy(apiKeyPolicy(t, key)))

	for i, s := range snippets {
		t.Run(strings.TrimSuffix(s.client.script, ".mjs"), func(t *testing.T) {
			for mod, names := range s.imports {
				check := fmt.Sprintf(`const m = await import(%q); const missing = %s.filter(n => !(n in m)); if (missing.length) { console.log(missing.join(",")); process.exit(3); }`,
					mod, jsonList(names))
				if out, err := nodeRun(t, node, check, "", ""); err != nil {
					t.Fatalf("%s does not export what the example imports (%s): %v", mod, strings.TrimSpace(out), err)
				}
			}
			if strings.Contains(s.code, "run(agent") {
				return // needs a model
			}
			before := len(env.Backend.Calls())
			code := strings.ReplaceAll(s.code, "http://127.0.0.1:7444/mcp", env.MCPURL)
			file := filepath.Join(clientsDir, fmt.Sprintf(".guide-snippet-%d.mjs", i))
			if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(file) })
			if out, err := nodeRun(t, node, "", filepath.Base(file), key); err != nil {
				t.Fatalf("the example failed: %v\n%s", err, out)
			}
			if !strings.Contains(s.code, "callTool") {
				return
			}
			calls := env.Backend.Calls()[before:]
			if len(calls) != 1 || calls[0].Request.GetTool() != "create_note" {
				t.Fatalf("the backend got %d calls, want the example's one create_note", len(calls))
			}
			if title := calls[0].Request.GetArguments().GetFields()["title"].GetStringValue(); strings.Contains(title, "&amp;") {
				t.Errorf("the backend got title %q: not repaired", title)
			}
		})
	}
}

// nodeRun runs a script file in clientsDir, or code with --input-type=module
// when file is empty, with FLOWDROP_API_KEY set to key.
func nodeRun(t *testing.T, node, code, file, key string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	args := []string{file}
	if file == "" {
		args = []string{"--input-type=module", "-e", code}
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = clientsDir
	cmd.Env = append(withoutVar(os.Environ(), "FLOWDROP_API_KEY"), "FLOWDROP_API_KEY="+key)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func jsonList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "[" + strings.Join(q, ",") + "]"
}
