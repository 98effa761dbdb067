package server_test

// Multi round-trip (MCP 2026-07-28, SEP-2322) on federated prompts/get and
// resources/read (server/mcpapi/fedinput.go): a go-sdk upstream's prompt
// and resource that ask for elicitation in two rounds, driven through the
// gateway by the go-sdk client and by raw requests.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/pipeline"
)

// The askUpstream's own states for its two rounds: the gateway sends them
// back to it and never shows them to a caller.
const (
	askState1 = "ask-upstream-state-1"
	askState2 = "ask-upstream-state-2"
	askURI    = "flowdrop-mcp://in_/doc://ask"
)

// askUpstream is a stateless go-sdk v1.8.0 server on 2026-07-28 whose
// prompt "ask" (argument topic) and resource doc://ask ask their caller
// for elicitation in two rounds — its name, then a confirmation — and
// answer once the second retry carries both answers and the upstream's
// own state; doc://nag asks again whatever the answer. The prompt, as a careful server does, answers -32021 when
// the request's _meta does not declare elicitation; the resource asks
// whatever was declared. The prompt "other" asks nothing. seen records
// each request: "get ask topic=T state=S elicit=B", "read doc://ask
// state=S elicit=B".
type askUpstream struct {
	url  string
	mu   sync.Mutex
	seen []string
}

func (u *askUpstream) saw() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

func startAskUpstream(t *testing.T) *askUpstream {
	t.Helper()
	u := &askUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "ask", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	elicits := func(meta mcp.Meta) bool {
		caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
		return caps["elicitation"] != nil
	}
	form := func(msg, field string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Message: msg, RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{field: map[string]any{"type": "string"}}}}
	}
	// rounds is the two rounds' logic: the requests to ask (nil: done)
	// and the state, or the answer.
	rounds := func(responses mcp.InputResponseMap, state string) (mcp.InputRequestMap, string, string) {
		answer := func(key, field string) string {
			r, ok := responses[key].(*mcp.ElicitResult)
			if !ok || r.Action != "accept" {
				return ""
			}
			s, _ := r.Content[field].(string)
			return s
		}
		switch {
		case state == askState1 && answer("who", "name") != "":
			return mcp.InputRequestMap{"sure": form("Sure?", "yes")}, askState2, ""
		case state == askState2 && answer("sure", "yes") != "":
			return nil, "", "confirmed " + answer("sure", "yes")
		}
		return mcp.InputRequestMap{"who": form("Your name?", "name")}, askState1, ""
	}
	record := func(format string, a ...any) {
		u.mu.Lock()
		u.seen = append(u.seen, fmt.Sprintf(format, a...))
		u.mu.Unlock()
	}
	s.AddPrompt(&mcp.Prompt{Name: "ask", Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			p := r.Params
			record("get ask topic=%s state=%s elicit=%v", p.Arguments["topic"], p.RequestState, elicits(p.Meta))
			if !elicits(p.Meta) {
				data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}})
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "elicitation required", Data: data}
			}
			ask, state, done := rounds(p.InputResponses, p.RequestState)
			if ask != nil {
				return &mcp.GetPromptResult{InputRequests: ask, RequestState: state}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: done + " about " + p.Arguments["topic"]}}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "other"}, func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		record("get other state=%s", r.Params.RequestState)
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "other"}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "doc://ask", Name: "ask"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		p := r.Params
		record("read %s state=%s elicit=%v", p.URI, p.RequestState, elicits(p.Meta))
		ask, state, done := rounds(p.InputResponses, p.RequestState)
		if ask != nil {
			return &mcp.ReadResourceResult{InputRequests: ask, RequestState: state}, nil
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: p.URI, Text: done}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "doc://nag", Name: "nag"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		record("read %s state=%s elicit=%v", r.Params.URI, r.Params.RequestState, elicits(r.Params.Meta))
		return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{"again": form("Again?", "name")}, RequestState: askState1}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	u.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

// askEnv is a gateway fronting an askUpstream as in_ (its tool in_echo),
// with callers alice and bob, both allowed its prompts and resources,
// auditing to a file; forbid is the policy's mcp_upstreams.input.forbid
// for the upstream.
type askEnv struct {
	env   *gatewaytest.Env
	up    *askUpstream
	audit string
	ctx   context.Context
}

func startAskEnv(t *testing.T, forbid ...string) *askEnv {
	t.Helper()
	up := startAskUpstream(t)
	a := &askEnv{up: up, audit: filepath.Join(t.TempDir(), "audit.jsonl"), ctx: testCtx(t)}
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "alice", SHA256: policy.HashAPIKey("alice-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "bob", SHA256: policy.HashAPIKey("bob-key"), Roles: []string{policy.RoleInvoker}},
	}}
	access := policy.ToolAccess{Allow: []string{"in_*"}, Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{"alice": access, "bob": access}}
	p.Audit = server.AuditConfig{Path: a.audit}
	if len(forbid) > 0 {
		p.MCPUpstreams.Input.Forbid = map[string][]string{up.url: forbid}
	}
	a.env = gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p), importedTool("in_echo", up.url, "echo"))
	return a
}

// client is a go-sdk client of key's caller on version; with elicit, its
// handler answers every form (its multi round-trip middleware, on by
// default, fulfils the rounds and retries) and counts what it was asked.
func (a *askEnv) client(t *testing.T, key, version string, elicit bool, asked *[]string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if elicit {
		var mu sync.Mutex
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			*asked = append(*asked, r.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "yes": "yes"}}, nil
		}
	}
	return mustConnect(t, a.ctx, a.env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer " + key}}, version: version, client: opts})
}

// post sends one 2026-07-28 request (declaring elicitation) of key's
// caller and returns the response.
func (a *askEnv) post(t *testing.T, key, method, name string, params map[string]any) *jsonrpc.Response {
	t.Helper()
	params["_meta"] = map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}}}
	_, r := mcpRequest2026(t, a.ctx, a.env.MCPURL, http.Header{"Authorization": {"Bearer " + key}}, method, name, params)
	return r
}

// firstRound is alice's first round of method on name: its sealed state.
func (a *askEnv) firstRound(t *testing.T, method, name string, params map[string]any) string {
	t.Helper()
	r := a.post(t, "alice-key", method, name, params)
	var res struct {
		ResultType    string          `json:"resultType"`
		InputRequests json.RawMessage `json:"inputRequests"`
		RequestState  string          `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.ResultType != "input_required" || res.RequestState == "" || !strings.Contains(string(res.InputRequests), "Your name?") {
		t.Fatalf("%s %s first round: %v %s, want input_required asking for a name with a state", method, name, r.Error, r.Result)
	}
	if strings.Contains(string(r.Result), askState1) {
		t.Fatalf("the upstream's own state reached the caller: %s", r.Result)
	}
	return res.RequestState
}

// TestMCPFederatedInputRounds: a go-sdk caller on 2026-07-28 that can
// elicit completes an upstream prompt's and resource's two rounds through
// the gateway: each request for input reaches it, each answer and the
// upstream's own state reach the upstream (which sees elicitation
// declared), the prompt's argument is entity-decoded on every round, and
// every round is audited with its number and the kinds asked, never what.
func TestMCPFederatedInputRounds(t *testing.T) {
	t.Parallel()
	a := startAskEnv(t)
	var asked []string
	cs := a.client(t, "alice-key", "2026-07-28", true, &asked)
	for _, row := range []struct {
		name, reason string
		do           func() (string, error)
		want         string
		seen         []string
	}{
		{"prompt", "prompts/get: two rounds relayed, the topic decoded (RT-TOOL-8) on each", func() (string, error) {
			r, err := cs.GetPrompt(a.ctx, &mcp.GetPromptParams{Name: "in_ask", Arguments: map[string]string{"topic": "S&amp;P"}})
			if err != nil || len(r.Messages) != 1 {
				return "", err
			}
			tc, _ := r.Messages[0].Content.(*mcp.TextContent)
			return tc.Text, nil
		}, "confirmed yes about S&P", []string{
			"get ask topic=S&P state= elicit=true", "get ask topic=S&P state=" + askState1 + " elicit=true", "get ask topic=S&P state=" + askState2 + " elicit=true"}},
		{"resource", "resources/read: two rounds relayed to the upstream's URI", func() (string, error) {
			r, err := cs.ReadResource(a.ctx, &mcp.ReadResourceParams{URI: askURI})
			if err != nil || len(r.Contents) != 1 {
				return "", err
			}
			if r.Contents[0].URI != askURI {
				return "", fmt.Errorf("contents under %q, want the face URI", r.Contents[0].URI)
			}
			return r.Contents[0].Text, nil
		}, "confirmed yes", []string{
			"read doc://ask state= elicit=true", "read doc://ask state=" + askState1 + " elicit=true", "read doc://ask state=" + askState2 + " elicit=true"}},
	} {
		t.Run(row.name, func(t *testing.T) {
			asked = nil
			before := len(a.up.saw())
			got, err := row.do()
			if err != nil || got != row.want {
				t.Fatalf("got %q, %v; want %q (%s)", got, err, row.want, row.reason)
			}
			if !slices.Equal(asked, []string{"Your name?", "Sure?"}) {
				t.Errorf("the caller was asked %q, want both rounds' forms (%s)", asked, row.reason)
			}
			if seen := a.up.saw()[before:]; !slices.Equal(seen, row.seen) {
				t.Errorf("the upstream saw %q, want %q (%s)", seen, row.seen, row.reason)
			}
		})
	}
	lines, raw := auditLines(t, a.env, a.audit)
	for _, secret := range []string{"Ada", "Your name?", "Sure?", askState1, askState2, "amp;"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the audit file holds %q: a round's content must not be logged", secret)
		}
	}
	for _, name := range []string{"in_ask", askURI} {
		var rounds []string
		for _, l := range lines {
			if l["tool"] == name {
				rounds = append(rounds, fmt.Sprintf("%v %v %v %v", l["decision"], l["input_round"], l["input_asked"], l["input_answered"]))
			}
		}
		want := []string{"allow 1 [elicitation] <nil>", "allow 2 [elicitation] 1", "allow 3 <nil> 1"}
		if !slices.Equal(rounds, want) {
			t.Errorf("%s's audit lines: %q, want %q", name, rounds, want)
		}
	}
}

// TestMCPFederatedInputRefusals: what a round refuses, on the prompt (its
// upstream answers -32021 when elicitation is not declared to it) and the
// resource (its upstream asks anyway): a policy forbidding the upstream to
// elicit (-32015), a caller that did not declare elicitation (-32021
// naming it), a caller before 2026-07-28 (invalid request saying the
// revision); and of a retry's state (-32602, never reaching the
// upstream): tampered, for another prompt, for another method, another
// caller's. The untouched state then completes its round.
func TestMCPFederatedInputRefusals(t *testing.T) {
	t.Parallel()
	t.Run("callers", func(t *testing.T) {
		t.Parallel()
		a, forbidden := startAskEnv(t), startAskEnv(t, "elicitation")
		var asked []string
		for _, row := range []struct {
			name, reason string
			env          *askEnv
			version      string
			elicit       bool
			code         int64
			want         string
		}{
			{"forbidden", "mcp_upstreams.input.forbid: elicitation for this upstream", forbidden, "2026-07-28", true, mcpapi.MCPCodeInputForbidden, "policy forbids"},
			{"undeclared", "the caller declared no elicitation", a, "2026-07-28", false, mcp.CodeMissingRequiredClientCapabilities, "elicitation"},
			{"before-2026", "a 2025-11-25 caller cannot answer in rounds", a, "2025-11-25", true, jsonrpc.CodeInvalidRequest, "2026-07-28"},
		} {
			cs := row.env.client(t, "alice-key", row.version, row.elicit, &asked)
			for _, req := range []struct {
				what string
				do   func() error
			}{
				{"prompt", func() error {
					_, err := cs.GetPrompt(row.env.ctx, &mcp.GetPromptParams{Name: "in_ask", Arguments: map[string]string{"topic": "x"}})
					return err
				}},
				{"resource", func() error {
					_, err := cs.ReadResource(row.env.ctx, &mcp.ReadResourceParams{URI: askURI})
					return err
				}},
			} {
				t.Run(row.name+"/"+req.what, func(t *testing.T) {
					asked = nil
					err := req.do()
					var werr *jsonrpc.Error
					if !errors.As(err, &werr) || werr.Code != row.code || !strings.Contains(werr.Message, row.want) {
						t.Fatalf("got %v, want code %d saying %q (%s)", err, row.code, row.want, row.reason)
					}
					if row.code == mcp.CodeMissingRequiredClientCapabilities {
						var data mcp.MissingRequiredClientCapabilityData
						if json.Unmarshal(werr.Data, &data) != nil || data.RequiredCapabilities == nil || data.RequiredCapabilities.Elicitation == nil {
							t.Errorf("error data %s does not name elicitation (%s)", werr.Data, row.reason)
						}
					}
					if len(asked) != 0 {
						t.Errorf("the caller was asked %q (%s)", asked, row.reason)
					}
					if strings.Contains(werr.Message, row.env.up.url) || strings.Contains(werr.Message, "127.0.0.1") {
						t.Errorf("the refusal names the upstream: %q", werr.Message)
					}
				})
			}
		}
		// What the upstream was told: elicitation only where the caller
		// declared it and the policy allows it.
		for _, s := range append(a.up.saw(), forbidden.up.saw()...) {
			if strings.Contains(s, "elicit=true") {
				t.Errorf("the upstream was told the caller can elicit: %q", s)
			}
		}
	})

	t.Run("states", func(t *testing.T) {
		t.Parallel()
		a := startAskEnv(t)
		state := a.firstRound(t, "prompts/get", "in_ask", map[string]any{"name": "in_ask", "arguments": map[string]any{"topic": "x"}})
		readState := a.firstRound(t, "resources/read", askURI, map[string]any{"uri": askURI})
		raw, err := base64.RawURLEncoding.DecodeString(state)
		if err != nil {
			t.Fatalf("the sealed state is not URL-safe base64: %v", err)
		}
		raw[len(raw)-1] ^= 1
		tampered := base64.RawURLEncoding.EncodeToString(raw)
		answer := map[string]any{"who": map[string]any{"action": "accept", "content": map[string]any{"name": "Eve"}}}
		getWith := func(name, st string) map[string]any {
			return map[string]any{"name": name, "arguments": map[string]any{"topic": "x"}, "inputResponses": answer, "requestState": st}
		}
		for _, row := range []struct {
			name, reason, key, method, target string
			params                            map[string]any
			want                              string
		}{
			{"tampered", "one flipped bit of the sealed state", "alice-key", "prompts/get", "in_ask", getWith("in_ask", tampered), "not one this gateway issued"},
			{"forged", "the upstream's own state presented as the gateway's", "alice-key", "prompts/get", "in_ask", getWith("in_ask", askState1), "not one this gateway issued"},
			{"other-prompt", "in_ask's state presented to in_other", "alice-key", "prompts/get", "in_other", map[string]any{"name": "in_other", "inputResponses": answer, "requestState": state}, "issued for another prompt"},
			{"other-method", "a resources/read state presented to prompts/get", "alice-key", "prompts/get", "in_ask", getWith("in_ask", readState), "another request than prompts/get"},
			{"other-resource", "the prompt's state presented to resources/read", "alice-key", "resources/read", askURI, map[string]any{"uri": askURI, "inputResponses": answer, "requestState": state}, "another request than resources/read"},
			{"other-caller", "alice's state presented by bob", "bob-key", "prompts/get", "in_ask", getWith("in_ask", state), "issued to another caller"},
			{"no-state", "answers without the state they answer", "alice-key", "prompts/get", "in_ask", map[string]any{"name": "in_ask", "arguments": map[string]any{"topic": "x"}, "inputResponses": answer}, "without the requestState"},
		} {
			t.Run(row.name, func(t *testing.T) {
				before := len(a.up.saw())
				r := a.post(t, row.key, row.method, row.target, row.params)
				var werr *jsonrpc.Error
				if !errors.As(r.Error, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, row.want) {
					t.Fatalf("got %v / %s, want invalid params saying %q (%s)", r.Error, r.Result, row.want, row.reason)
				}
				if got := a.up.saw()[before:]; len(got) != 0 {
					t.Errorf("the refused retry reached the upstream: %q (%s)", got, row.reason)
				}
			})
		}
		// The untouched state: the upstream gets alice's answer with its own state.
		r := a.post(t, "alice-key", "prompts/get", "in_ask", getWith("in_ask", state))
		if r.Error != nil || !strings.Contains(string(r.Result), "Sure?") || strings.Contains(string(r.Result), askState2) {
			t.Fatalf("the untouched state: %v %s, want the second round's request, its state sealed", r.Error, r.Result)
		}
		if seen := a.up.saw(); seen[len(seen)-1] != "get ask topic=x state="+askState1+" elicit=true" {
			t.Errorf("the upstream saw %q last, want the retry with its own state", seen[len(seen)-1])
		}
	})
}

// TestMCPFederatedInputRoundsBounded: a resource whose upstream asks again
// after every answer is refused at pipeline.InputMaxRounds rounds (-32010,
// the upstream asked more than the gateway relays), having asked the
// caller one fewer times.
func TestMCPFederatedInputRoundsBounded(t *testing.T) {
	t.Parallel()
	a := startAskEnv(t)
	var asked []string
	cs := a.client(t, "alice-key", "2026-07-28", true, &asked)
	_, err := cs.ReadResource(a.ctx, &mcp.ReadResourceParams{URI: "flowdrop-mcp://in_/doc://nag"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != mcpapi.MCPCodeUpstreamTooLarge || !strings.Contains(werr.Message, "rounds") {
		t.Fatalf("got %v, want -32010 saying the rounds' bound", err)
	}
	if len(asked) != pipeline.InputMaxRounds-1 || len(a.up.saw()) != pipeline.InputMaxRounds {
		t.Errorf("the caller was asked %d times and the upstream read %d times, want %d and %d",
			len(asked), len(a.up.saw()), pipeline.InputMaxRounds-1, pipeline.InputMaxRounds)
	}
}
