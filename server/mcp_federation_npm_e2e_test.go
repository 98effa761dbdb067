package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/server/mcpapi"
)

// npmFederationScript drives the federation with the npm agent SDK
// @modelcontextprotocol/sdk, from tools/mcpclients.
const npmFederationScript = "modelcontextprotocol-sdk-federation.mjs"

// npmFederationReport is what the script prints.
type npmFederationReport struct {
	Capabilities []string `json:"capabilities"`
	Resources    []string `json:"resources"`
	Templates    []string `json:"templates"`
	Prompts      []string `json:"prompts"`
	Reads        []struct {
		URI      string `json:"uri"`
		Contents []struct {
			URI  string  `json:"uri"`
			Text *string `json:"text"`
		} `json:"contents"`
		Error *scriptErr `json:"error"`
	} `json:"reads"`
	Prompt *struct {
		Messages []struct {
			Role string  `json:"role"`
			Text *string `json:"text"`
		} `json:"messages"`
		Meta  map[string]any `json:"meta"`
		Error *scriptErr     `json:"error"`
	} `json:"prompt"`
	Completion *struct {
		Values []string   `json:"values"`
		Error  *scriptErr `json:"error"`
	} `json:"completion"`
	Call *struct {
		ModelText string `json:"modelText"`
		IsError   bool   `json:"isError"`
		Progress  []struct {
			Progress float64  `json:"progress"`
			Total    *float64 `json:"total"`
		} `json:"progress"`
		Error *scriptErr `json:"error"`
	} `json:"call"`
	Error *scriptErr `json:"error"`
}

type scriptErr struct{ Name, Message string }

// runNPMFederation runs the script on the pinned Node as the caller with
// key, with plan on stdin.
func runNPMFederation(t *testing.T, node, mcpURL, key string, plan map[string]any) npmFederationReport {
	t.Helper()
	in, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, npmFederationScript, mcpURL)
	cmd.Dir = "../tools/mcpclients"
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "FLOWDROP_API_KEY=") }),
		"FLOWDROP_API_KEY="+key)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s as %s: %v\nstdout: %s\nstderr: %s", npmFederationScript, key, err, out, stderr.String())
	}
	var r npmFederationReport
	if err := json.Unmarshal(out, &r); err != nil || r.Error != nil {
		t.Fatalf("%s as %s printed %s (%v)\nstderr: %s", npmFederationScript, key, out, err, stderr.String())
	}
	return r
}

// TestNPMAgentSDKDrivesFederation: an agent built on the npm SDK
// @modelcontextprotocol/sdk (pinned in tools/mcpclients), with its
// defaults over streamable HTTP, sees through the gateway what it fronts
// of server-everything over streamable HTTP (ev_) and stdio (st_):
// resources listed and read under their face URIs, a template listed, a
// prompt got with its entity-encoded argument decoded, a completion, and
// the upstream's progress for a call reaching the SDK's onprogress. A
// caller whose view denies ev_ sees none of its resources or prompts.
func TestNPMAgentSDKDrivesFederation(t *testing.T) {
	f := startFederation(t, federateLongRunning)
	node, _ := everythingNode(t)
	doc, err := os.ReadFile(everythingDir + "/dist/docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("agent", func(t *testing.T) {
		r := runNPMFederation(t, node, f.env.MCPURL, "agent-key", map[string]any{
			"read":     []string{evDoc, stDoc},
			"prompt":   map[string]any{"name": "ev_args-prompt", "arguments": map[string]string{"city": "S&atilde;o Paulo"}},
			"complete": map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "ev_completable-prompt"}, "argument": map[string]any{"name": "department", "value": "En"}},
			// Four steps of 250 ms, each past the progress sink's rate interval.
			"progress": map[string]any{"tool": evLong, "arguments": map[string]any{"duration": 1, "steps": 4}},
		})
		for _, c := range []struct {
			reason string
			ok     bool
		}{
			{"both upstreams' documents are listed under their face URIs", slices.Contains(r.Resources, evDoc) && slices.Contains(r.Resources, stDoc)},
			{"the agent's resource deny pattern holds in the SDK's listing", !slices.Contains(r.Resources, evDenied)},
			{"a template is listed under its face URI", slices.Contains(r.Templates, evTmpl)},
			{"both upstreams' prompts are listed", slices.Contains(r.Prompts, "ev_args-prompt") && slices.Contains(r.Prompts, "st_args-prompt")},
			{"completions are declared", slices.Contains(r.Capabilities, "completions")},
		} {
			if !c.ok {
				t.Errorf("%s: %+v", c.reason, r)
			}
		}
		if len(r.Reads) != 2 {
			t.Fatalf("reads %+v, want two", r.Reads)
		}
		for _, read := range r.Reads {
			if read.Error != nil || len(read.Contents) != 1 || read.Contents[0].URI != read.URI ||
				read.Contents[0].Text == nil || *read.Contents[0].Text != string(doc) {
				t.Errorf("read %s: the document under its face URI, got %+v", read.URI, read)
			}
		}
		if p := r.Prompt; p == nil || p.Error != nil || len(p.Messages) != 1 || p.Messages[0].Text == nil ||
			*p.Messages[0].Text != "What's weather in São Paulo?" || p.Meta[mcpapi.MCPMetaRepairs] == nil {
			t.Errorf("prompts/get: the upstream sees the decoded city and the repair is reported, got %+v", p)
		}
		if c := r.Completion; c == nil || c.Error != nil || !slices.Equal(c.Values, []string{"Engineering"}) {
			t.Errorf("completion/complete: [Engineering], got %+v", c)
		}
		call := r.Call
		if call == nil || call.Error != nil || call.IsError || !strings.Contains(call.ModelText, "Long running operation completed") {
			t.Fatalf("%s: the operation's completion, got %+v", evLong, call)
		}
		if len(call.Progress) == 0 {
			t.Fatal("no notifications/progress reached the SDK for its progressToken")
		}
		for i, p := range call.Progress {
			if p.Total == nil || *p.Total != 4 || p.Progress < 1 || p.Progress > 4 || (i > 0 && p.Progress <= call.Progress[i-1].Progress) {
				t.Errorf("progress %d = %+v, want increasing steps of 4", i, p)
			}
		}
	})

	t.Run("denied-upstream", func(t *testing.T) {
		r := runNPMFederation(t, node, f.env.MCPURL, "denied-key", map[string]any{
			"read":     []string{evDoc},
			"complete": map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "ev_completable-prompt"}, "argument": map[string]any{"name": "department", "value": "E"}},
		})
		for _, list := range [][]string{r.Resources, r.Templates, r.Prompts} {
			for _, name := range list {
				if strings.Contains(name, "ev_") {
					t.Errorf("a denied upstream's %q is listed", name)
				}
			}
		}
		if !slices.Contains(r.Resources, stDoc) || !slices.Contains(r.Prompts, "st_args-prompt") {
			t.Errorf("the control: the st_ upstream's resources and prompts are listed: %+v", r)
		}
		if len(r.Reads) != 1 || r.Reads[0].Error == nil || len(r.Reads[0].Contents) != 0 {
			t.Errorf("reading a denied upstream's document is refused, got %+v", r.Reads)
		}
		if c := r.Completion; c == nil || c.Error == nil || !strings.Contains(c.Error.Message, "unknown reference") {
			t.Errorf("completing a denied upstream's prompt is refused, got %+v", c)
		}
	})
}
