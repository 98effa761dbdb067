package server_test

// An upstream imported without a prefix (server/mcpapi/federation.go):
// its resources, templates, prompts and completions served under their
// own URIs and names beside a prefixed upstream's, through the gateway to
// the go-sdk v1.8.0 client; its items that would read as the prefixed
// upstream's hidden and unreachable; two prefix-less upstreams none.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// The plain upstream's own items that read as the up_ upstream's.
const (
	plainSpoofURI    = "flowdrop-mcp://up_/doc://shadow"
	plainSpoofUpper  = "FLOWDROP-MCP:shadow"
	plainSpoofPrompt = "up_spoof"
	// plainTrigger's updates leave the plain upstream as updates of
	// subDocA: an upstream naming another's URI.
	plainTrigger = "doc://trigger"
)

// plainUpstream is a go-sdk upstream with a tool (its name given), resources, a template,
// prompts, completions and subscriptions; it records what reached it.
type plainUpstream struct {
	mcp  *mcp.Server
	url  string
	mu   sync.Mutex
	seen []string // "read URI", "get NAME name=VALUE", "complete REF"
}

func (u *plainUpstream) record(s string) {
	u.mu.Lock()
	u.seen = append(u.seen, s)
	u.mu.Unlock()
}

func (u *plainUpstream) saw() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

func startPlainUpstream(t *testing.T, tool string) *plainUpstream {
	t.Helper()
	u := &plainUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			u.record("complete " + r.Params.Ref.Name + r.Params.Ref.URI)
			v := "Ada"
			if r.Params.Ref.Type == "ref/resource" {
				v = "7"
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{v}}}, nil
		},
	})
	u.mcp = s
	mcp.AddTool(s, &mcp.Tool{Name: tool}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		u.record("read " + r.Params.URI)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "plain " + r.Params.URI}}}, nil
	}
	// The SDK sends an update only to a session subscribed to its URI: the
	// spoof is made on the way out.
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.ResourceUpdatedNotificationParams); ok && p.URI == plainTrigger {
				p.URI = subDocA
			}
			return next(ctx, method, req)
		}
	})
	for _, uri := range []string{"doc://a", plainTrigger, plainSpoofURI, plainSpoofUpper} {
		s.AddResource(&mcp.Resource{URI: uri, Name: "r"}, read)
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "doc://t/{id}", Name: "t"}, read)
	prompt := func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		u.record("get " + r.Params.Name + " name=" + r.Params.Arguments["name"])
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["name"]}}}}, nil
	}
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}}, prompt)
	s.AddPrompt(&mcp.Prompt{Name: plainSpoofPrompt}, prompt)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	u.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

// importedTool is a gateway tool imported from the upstream at url.
func importedTool(name, url, tool string) gatewaytest.Option {
	return gatewaytest.WithTool(func(string) registry.Tool {
		schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
		return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: url},
			Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: tool}}}
	})
}

// prefixlessPolicy: agent sees everything; denied has the prefix-less
// upstream (its tool echo) out of view.
func prefixlessPolicy(t *testing.T) server.PolicyConfig {
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "denied", SHA256: policy.HashAPIKey("denied-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"agent":  {Allow: []string{"*"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
		"denied": {Allow: []string{"*"}, Deny: []string{"echo"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
	}}
	p.MCPUpstreams.Input.KeyFiles = []string{sessionKeyFile(t)}
	return p
}

// TestMCPFederatesPrefixlessUpstream: the go-sdk client through the
// gateway to a go-sdk upstream imported without a prefix (tool echo),
// beside one imported under up_: its resources, template, prompts and
// completions under their own URIs and names, capabilities declared,
// prompts/get arguments normalized, a subscription's update carrying the
// upstream's own URI; its items that read as up_'s hidden and unreachable
// (and their updates dropped); a caller with it out of view gets none.
func TestMCPFederatesPrefixlessUpstream(t *testing.T) {
	plain, prefixed := startPlainUpstream(t, "echo"), startSubsUpstream(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(prefixlessPolicy(t)),
		importedTool("echo", plain.url, "echo"), importedTool("up_echo", prefixed.url, "echo"))
	ctx := longCtx(t)
	waitFederated(t, ctx, env.MCPURL)
	agent, agentUp := sessionClient(t, ctx, env.MCPURL, "agent-key", nil)
	denied, _ := sessionClient(t, ctx, env.MCPURL, "denied-key", nil)
	if c := agent.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe || c.Prompts == nil || c.Completions == nil {
		t.Fatalf("capabilities %+v: resources with subscribe, prompts and completions are served", c)
	}

	t.Run("listings", func(t *testing.T) {
		res, err := agent.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		tmpls, err := agent.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var templates []string
		for _, r := range tmpls.ResourceTemplates {
			templates = append(templates, r.URITemplate)
		}
		prompts, err := agent.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range prompts.Prompts {
			names = append(names, p.Name)
		}
		for _, tc := range []struct {
			name, reason string
			got          []string
			item         string
			listed       bool
		}{
			{"own-uri", "the prefix-less upstream's resource under its own URI", uris, "doc://a", true},
			{"prefixed-uri", "the prefixed upstream's, as before", uris, subDocA, true},
			{"spoof-uri", "a flowdrop-mcp:// URI of the prefix-less upstream reads as up_'s: hidden", uris, plainSpoofURI, false},
			{"spoof-uri-case", "the face's scheme in another case: hidden", uris, plainSpoofUpper, false},
			{"own-template", "its template under its own URI template", templates, "doc://t/{id}", true},
			{"own-prompt", "its prompt under its own name", names, "greet", true},
			{"spoof-prompt", "a prompt name starting with the federated prefix up_: hidden", names, plainSpoofPrompt, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if slices.Contains(tc.got, tc.item) != tc.listed {
					t.Fatalf("%s: %q listed %v in %v", tc.reason, tc.item, !tc.listed, tc.got)
				}
			})
		}
	})

	t.Run("read", func(t *testing.T) {
		for _, tc := range []struct{ name, reason, uri, want string }{
			{"own", "a resource by its own URI", "doc://a", "plain doc://a"},
			{"template", "a URI of its template", "doc://t/7", "plain doc://t/7"},
			{"prefixed", "the prefixed upstream's, as before", subDocA, "doc"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r, err := agent.ReadResource(ctx, &mcp.ReadResourceParams{URI: tc.uri})
				if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != tc.want || r.Contents[0].URI != tc.uri {
					t.Fatalf("%s: %+v %v", tc.reason, r, err)
				}
			})
		}
		for _, tc := range []struct{ name, reason, uri string }{
			{"spoof", "a flowdrop-mcp:// URI goes to the prefix it names (up_ has no doc://shadow), never to the prefix-less upstream", plainSpoofURI},
			{"spoof-case", "the face's scheme in another case reaches no upstream", plainSpoofUpper},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := agent.ReadResource(ctx, &mcp.ReadResourceParams{URI: tc.uri})
				var e *jsonrpc.Error
				if !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(e.Message, "not found") {
					t.Fatalf("%s: %v", tc.reason, err)
				}
			})
		}
		if slices.Contains(plain.saw(), "read "+plainSpoofURI) || slices.Contains(plain.saw(), "read "+plainSpoofUpper) {
			t.Fatalf("a URI that reads as prefixed reached the prefix-less upstream: %v", plain.saw())
		}
	})

	t.Run("prompts", func(t *testing.T) {
		r, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada &amp; Bob"}})
		if err != nil || len(r.Messages) != 1 || r.Messages[0].Content.(*mcp.TextContent).Text != "hello Ada & Bob" {
			t.Fatalf("prompts/get greet, its argument entity-decoded: %+v %v", r, err)
		}
		if _, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err == nil || !strings.Contains(err.Error(), "missing required argument") {
			t.Fatalf("prompts/get greet without its required argument: %v", err)
		}
		if _, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: plainSpoofPrompt}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
			t.Fatalf("a prompt name with the federated prefix up_ goes to up_ (which has no prompts), never the prefix-less upstream: %v", err)
		}
		if slices.Contains(plain.saw(), "get "+plainSpoofPrompt+" name=") {
			t.Fatalf("the hidden prompt reached the upstream: %v", plain.saw())
		}
	})

	t.Run("completions", func(t *testing.T) {
		for _, tc := range []struct {
			name, reason string
			ref          *mcp.CompleteReference
			arg, want    string
		}{
			{"prompt", "a prompt argument, by the prompt's own name", &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "name", "Ada"},
			{"template", "a template variable, by its own URI template", &mcp.CompleteReference{Type: "ref/resource", URI: "doc://t/{id}"}, "id", "7"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r, err := agent.Complete(ctx, &mcp.CompleteParams{Ref: tc.ref, Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: ""}})
				if err != nil || !slices.Equal(r.Completion.Values, []string{tc.want}) {
					t.Fatalf("%s: %+v %v", tc.reason, r, err)
				}
			})
		}
	})

	t.Run("subscribe", func(t *testing.T) {
		for _, uri := range []string{"doc://a", plainTrigger, subDocA, subDocB} {
			if err := agent.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe %s: %v", uri, err)
			}
		}
		if prefixed.subscribed("doc://a") != 1 {
			t.Fatalf("the prefixed upstream is not subscribed to its doc://a")
		}
		// The spoofed update (subDocA, from the prefix-less upstream) is
		// sent before the real one each round; then up_'s own doc://b,
		// after it, is awaited: were the spoof relayed, it would be in.
		if !fireUntil(ctx, plain.mcp, []string{plainTrigger, "doc://a"}, agentUp.ch, "doc://a") {
			t.Fatalf("the prefix-less upstream's update never arrived: %v", agentUp.got())
		}
		if !fireUntil(ctx, prefixed.mcp, []string{"doc://b"}, agentUp.ch, subDocB) {
			t.Fatalf("up_'s update never arrived: %v", agentUp.got())
		}
		if slices.Contains(agentUp.got(), subDocA) {
			t.Fatalf("the prefix-less upstream's update of a flowdrop-mcp:// URI was relayed as up_'s: %v", agentUp.got())
		}
	})

	t.Run("subscribe-2026", func(t *testing.T) {
		// From 2026-07-28, on the caller's subscriptions/listen stream.
		updated := make(chan string, 16)
		cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}},
			client: &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
				select {
				case updated <- r.Params.URI:
				default:
				}
			}}})
		if c := cs.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe {
			t.Fatalf("a 2026-07-28 caller is not declared resources.subscribe: %+v", c.Resources)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "doc://a"}); err != nil {
			t.Fatal(err)
		}
		if !fireUntil(ctx, plain.mcp, []string{"doc://a"}, updated, "doc://a") {
			t.Fatal("the prefix-less upstream's update never reached the listen stream with its own URI")
		}
		if r := listenRaw(t, env.MCPURL, "denied-key", []string{"doc://a"}); r == nil || r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("a caller with the upstream out of view listens to its resource: %+v", r)
		}
	})

	t.Run("denied", func(t *testing.T) {
		if err := denied.Subscribe(ctx, &mcp.SubscribeParams{URI: "doc://a"}); err == nil {
			t.Fatal("subscribing to an upstream out of view succeeded")
		}
		res, err := denied.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			if !strings.HasPrefix(r.URI, "flowdrop-mcp://up_/") {
				t.Fatalf("a caller with the prefix-less upstream out of view is listed %q", r.URI)
			}
		}
		if _, err := denied.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://a"}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("read out of view: %v", err)
		}
		if _, err := denied.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "x"}}); err == nil {
			t.Fatal("prompts/get of an upstream out of view succeeded")
		}
		if _, err := denied.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
			Argument: mcp.CompleteParamsArgument{Name: "name"}}); err == nil {
			t.Fatal("completion of an upstream out of view succeeded")
		}
	})
}

// TestMCPTwoPrefixlessUpstreamsNotFederated: two upstreams imported
// without a prefix are ambiguous: neither's resources or prompts are
// served (logged), their tools are.
func TestMCPTwoPrefixlessUpstreamsNotFederated(t *testing.T) {
	a, b := startPlainUpstream(t, "echo"), startPlainUpstream(t, "echo2")
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(prefixlessPolicy(t)), gatewaytest.WithLogOutput(logs),
		importedTool("echo", a.url, "echo"), importedTool("echo2", b.url, "echo2"))
	ctx := longCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}, version: "2025-11-25"})
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo2", Arguments: map[string]any{}}); err != nil || r.IsError {
		t.Fatalf("the control: the tools are served: %+v %v", r, err)
	}
	for _, tc := range []struct {
		name, reason string
		call         func() error
	}{
		{"resources", "resources/list is not offered", func() error { _, err := cs.ListResources(ctx, nil); return err }},
		{"prompts", "prompts/list is not offered", func() error { _, err := cs.ListPrompts(ctx, nil); return err }},
		{"read", "neither upstream's doc://a is read", func() error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://a"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err == nil {
				t.Fatalf("%s: it answered", tc.reason)
			}
		})
	}
	if c := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}, version: "2025-11-25"}).InitializeResult().Capabilities; c.Resources != nil || c.Prompts != nil || c.Completions != nil {
		t.Fatalf("capabilities beyond tools declared: %+v", c)
	}
	if len(a.saw())+len(b.saw()) != 0 {
		t.Fatalf("an upstream was reached: %v %v", a.saw(), b.saw())
	}
	if !strings.Contains(logs.String(), "imported without a prefix are not federated") {
		t.Fatalf("not logged: %s", logs.String())
	}
}

// waitFederated waits until agent-key's caller is declared resources,
// prompts and completions: the gateway has read an upstream offering them.
func waitFederated(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := poll(30*time.Second, func() error {
		cs, err := mcpConnect(t, ctx, url, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}, version: "2025-11-25"})
		if err != nil {
			return err
		}
		defer cs.Close()
		if c := cs.InitializeResult().Capabilities; c.Resources == nil || c.Prompts == nil || c.Completions == nil {
			return errors.New("capabilities not declared yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the upstreams' capabilities never reached the gateway: %v", err)
	}
}
