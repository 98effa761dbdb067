package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// TestGuideExamples: every fenced example in the guides under docs/ is
// checked — here, or by the test named for its kind — so an example cannot
// name a policy key, a field or a version the gateway does not have. A
// fenced block of a kind this table does not know fails the test: a new
// kind of example needs its check first.
func TestGuideExamples(t *testing.T) {
	guides, err := filepath.Glob("../docs/*.md")
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides: %v", err)
	}
	block := regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```")
	for _, g := range guides {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatch(string(b), -1) {
			lang, code := m[1], m[2]
			where := filepath.Base(g) + ": " + strings.SplitN(code, "\n", 2)[0]
			switch {
			case lang == "yaml" && strings.HasPrefix(code, "# A tools file"),
				lang == "yaml" && strings.HasPrefix(code, "# A minimal production policy"):
				// deploy/examples verbatim: deploy's TestExamplesLoadAndAreInTheOperationsGuide loads them.
			case lang == "yaml":
				// A policy file or a part of one: every key must be one the
				// policy file has (ParsePolicy's strict decoding), every value
				// of its type. (ParsePolicy would also open the files the
				// example names, which exist only on the example's host.)
				var f policyFile
				if err := yaml.UnmarshalStrict([]byte(code), &f); err != nil {
					t.Errorf("%s: not a policy file: %v", where, err)
				}
			case lang == "json" && strings.Contains(code, `"mcpServers"`):
				var cfg struct {
					MCPServers map[string]struct{ Type, URL string } `json:"mcpServers"`
				}
				if err := json.Unmarshal([]byte(code), &cfg); err != nil {
					t.Errorf("%s: %v", where, err)
				}
				for name, s := range cfg.MCPServers {
					if s.URL != "http://"+DefaultMCPListenAddr+"/mcp" || s.Type != "http" {
						t.Errorf("%s: server %s is %s %s, not the gateway's default MCP endpoint", where, name, s.Type, s.URL)
					}
				}
			case lang == "json":
				// A tool as the registry API takes it (flowdropctl tools
				// register -f): unknown fields are refused. "..." stands for
				// bytes the example leaves out.
				var tool gatewayv1.Tool
				if err := protojson.Unmarshal([]byte(strings.ReplaceAll(code, `"..."`, `""`)), &tool); err != nil {
					t.Errorf("%s: not a registry Tool: %v", where, err)
				}
			case lang == "js" && strings.Contains(code, "createGrpcTransport"),
				lang == "python":
				// The gRPC clients' excerpts: internal/clienttest's
				// TestAgentsGuideGRPCExcerptsMatchTheRunScripts.
			case lang == "js":
				// The agent SDKs' examples: internal/mcpclienttest's
				// TestAgentsGuideSnippetsRun runs them.
			case lang == "sh" && strings.HasPrefix(code, "flowdropctl tools import openapi"):
				// cmd/flowdropctl's TestToolsImportOpenAPIDryRun runs these flags.
			default:
				t.Errorf("%s: a ```%s example no test checks", where, lang)
			}
		}
	}
}
