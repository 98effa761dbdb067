package server_test

// Aliases and provider-safe export names end to end: a real NotesService
// imported as gRPC-method tools (named notes.NotesService.<Method>), an
// alias over its CreateNote registered through ToolRegistryService, and
// calls over the gateway's gRPC InvokeTool (decoded arguments and the
// model API's arguments_json) and MCP tools/call.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc/metadata"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

const aliasTarget = "notes.NotesService.CreateNote"

// teamNoteAlias is the alias under test: a narrower title (at most 20
// characters), two of the three priorities, pinned always (fixed) and the
// team always the caller's subject (injected); neither is in its schema.
func teamNoteAlias(t *testing.T, schema map[string]any) *gatewayv1.Tool {
	t.Helper()
	if schema == nil {
		schema = map[string]any{"type": "object", "additionalProperties": false, "required": []any{"title"},
			"properties": map[string]any{
				"title":    map[string]any{"type": "string", "maxLength": 20},
				"priority": map[string]any{"type": "string", "enum": []any{"PRIORITY_LOW", "PRIORITY_HIGH"}},
			}}
	}
	fixed, err := structpb.NewStruct(map[string]any{"pinned": true})
	if err != nil {
		t.Fatal(err)
	}
	return &gatewayv1.Tool{Name: "create_team_note", Description: "Create a pinned note for your team.",
		InputSchema: mustStructT(t, schema),
		Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_Alias{Alias: &gatewayv1.ToolAlias{
			Target: aliasTarget, FixedArguments: fixed, InjectedArguments: map[string]string{"team": "subject"}}}}}
}

func TestAliasEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	notes := notestest.Start(t, false)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	p := internalsPolicy()
	p.Audit = server.AuditConfig{Path: auditPath}
	// A rule on the target holds for calls through the alias too.
	p.Rules = append(p.Rules, policy.Rule{Name: "no-secret-notes", Tools: []string{aliasTarget}, Expr: `!args.title.contains("secret")`})
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))
	src, err := grpcimport.FromDescriptorSet(notestest.DescriptorSet())
	if err != nil {
		t.Fatal(err)
	}
	tools, _, err := grpcimport.Tools(src, grpcimport.Options{Target: notes.Addr, Prefix: "notes."})
	if err != nil {
		t.Fatal(err)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	admin := withKeyCtx(ctx, keyOps)
	for _, tool := range tools {
		if _, err := rc.RegisterTool(admin, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tool.GetName(), err)
		}
	}

	// Registration: what an alias may not be.
	refusals := []struct {
		name, reason string
		tool         func() *gatewayv1.Tool
		wantIn       []string
	}{
		{name: "widening-type", reason: "the overlay takes an integer title the target refuses: wider, named by pointer and keyword",
			tool: func() *gatewayv1.Tool {
				return teamNoteAlias(t, map[string]any{"type": "object", "additionalProperties": false,
					"properties": map[string]any{"title": map[string]any{"type": []any{"string", "integer"}}}})
			}, wantIn: []string{"/properties/title", `"type"`, "wider"}},
		{name: "undeclared-property", reason: "the overlay declares a property the target does not have",
			tool: func() *gatewayv1.Tool {
				return teamNoteAlias(t, map[string]any{"type": "object", "additionalProperties": false,
					"properties": map[string]any{"title": map[string]any{"type": "string"}, "colour": map[string]any{"type": "string"}}})
			}, wantIn: []string{"/properties/colour", "wider"}},
		{name: "shows-injected", reason: "the schema the model sees declares an argument the gateway sets",
			tool: func() *gatewayv1.Tool {
				return teamNoteAlias(t, map[string]any{"type": "object", "additionalProperties": false,
					"properties": map[string]any{"title": map[string]any{"type": "string"}, "team": map[string]any{"type": "string"}}})
			}, wantIn: []string{"/properties/team", "set by the gateway"}},
		{name: "no-target", reason: "an alias of a tool that is not registered",
			tool: func() *gatewayv1.Tool {
				a := teamNoteAlias(t, nil)
				a.GetSpec().GetAlias().Target = "notes.NotesService.Missing"
				return a
			}, wantIn: []string{"spec.alias.target", "notes.NotesService.Missing"}},
		{name: "fixed-wrong-type", reason: "a fixed value the target's schema refuses (pinned is a boolean)",
			tool: func() *gatewayv1.Tool {
				a := teamNoteAlias(t, nil)
				a.GetSpec().GetAlias().FixedArguments = mustStructT(t, map[string]any{"pinned": "yes"})
				return a
			}, wantIn: []string{"/properties/pinned", "wider"}},
	}
	for _, tc := range refusals {
		_, err := rc.RegisterTool(admin, &gatewayv1.RegisterToolRequest{Tool: tc.tool()})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument (%s)", tc.name, err, tc.reason)
			continue
		}
		for _, s := range tc.wantIn {
			if !strings.Contains(status.Convert(err).Message(), s) {
				t.Errorf("%s: %q does not name %s (%s)", tc.name, status.Convert(err).Message(), s, tc.reason)
			}
		}
	}
	if _, err := rc.RegisterTool(admin, &gatewayv1.RegisterToolRequest{Tool: teamNoteAlias(t, nil)}); err != nil {
		t.Fatalf("register the alias: %v", err)
	}
	chain := teamNoteAlias(t, nil)
	chain.Name, chain.GetSpec().GetAlias().Target = "chained", "create_team_note"
	if _, err := rc.RegisterTool(admin, &gatewayv1.RegisterToolRequest{Tool: chain}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "itself an alias") {
		t.Errorf("an alias of an alias: %v, want InvalidArgument", err)
	}
	// An invoker reads the alias without its target or what it sets.
	got, err := rc.GetTool(withKeyCtx(ctx, keyInvoker), &gatewayv1.GetToolRequest{Name: "create_team_note"})
	if err != nil {
		t.Fatal(err)
	}
	if a := got.GetTool().GetSpec().GetAlias(); a.GetTarget() != "" || a.GetFixedArguments() != nil || len(a.GetInjectedArguments()) != 0 {
		t.Errorf("an invoker reads the alias's %v", a)
	}

	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: map[string][]string{"X-Api-Key": {keyInvoker}}})
	invoker := withKeyCtx(ctx, keyInvoker)
	type outcome struct {
		ok  bool
		msg string
	}
	faces := []struct {
		name string
		call func(tool string, args map[string]any) outcome
	}{
		{"grpc", func(tool string, args map[string]any) outcome {
			_, err := env.Client.InvokeTool(invoker, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, args)})
			return outcome{err == nil, status.Convert(err).Message()}
		}},
		{"grpc-arguments-json", func(tool string, args map[string]any) outcome {
			b, _ := json.Marshal(args)
			_, err := env.Client.InvokeTool(invoker, &gatewayv1.InvokeToolRequest{Tool: tool, ArgumentsJson: string(b)})
			return outcome{err == nil, status.Convert(err).Message()}
		}},
		{"mcp", func(tool string, args map[string]any) outcome {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				return outcome{false, err.Error()}
			}
			return outcome{!res.IsError, resultText(res)}
		}},
	}
	// The alias is listed as itself, without what the gateway sets.
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lr.Tools {
		if tl.Name == "create_team_note" {
			b, _ := json.Marshal(tl.InputSchema)
			if strings.Contains(string(b), "team") || strings.Contains(string(b), "pinned") || tl.Description != "Create a pinned note for your team." {
				t.Errorf("MCP lists the alias as %s %q", b, tl.Description)
			}
		}
	}

	for _, face := range faces {
		t.Run(face.name, func(t *testing.T) {
			before := len(notes.Service.Created())
			if o := face.call("create_team_note", map[string]any{"title": "standup", "priority": "PRIORITY_HIGH"}); !o.ok {
				t.Fatalf("call by alias: %s", o.msg)
			}
			sent := notes.Service.Created()
			if len(sent) != before+1 {
				t.Fatalf("the service received %d calls, want 1", len(sent)-before)
			}
			last := sent[len(sent)-1]
			if last.GetTitle() != "standup" || last.GetPriority() != testingv1.Priority_PRIORITY_HIGH || !last.GetPinned() || last.GetTeam() != "invoker" {
				t.Errorf("the service received %v, want the model's title and priority, pinned (fixed) and team %q (the caller's subject)", last, "invoker")
			}

			cases := []struct {
				name, reason string
				args         map[string]any
				wantIn       string
			}{
				{"override-injected", "the model cannot set what the gateway injects", map[string]any{"title": "x", "team": "other-team"}, "team"},
				{"override-fixed", "nor what it fixes", map[string]any{"title": "x", "pinned": false}, "pinned"},
				{"narrowed-length", "the alias's maxLength, tighter than the target's", map[string]any{"title": strings.Repeat("a", 21)}, "at most 20"},
				{"narrowed-enum", "a priority the target takes and the alias does not", map[string]any{"title": "x", "priority": "PRIORITY_UNSPECIFIED"}, "PRIORITY_HIGH"},
				{"target-rule", "the target's CEL rule holds through the alias", map[string]any{"title": "secret"}, "no-secret-notes"},
			}
			for _, tc := range cases {
				o := face.call("create_team_note", tc.args)
				if o.ok {
					t.Errorf("%s: accepted, want a refusal (%s)", tc.name, tc.reason)
				} else if !strings.Contains(o.msg, tc.wantIn) {
					t.Errorf("%s: %q does not name %s (%s)", tc.name, o.msg, tc.wantIn, tc.reason)
				}
			}
			if n := len(notes.Service.Created()); n != before+1 {
				t.Errorf("refused calls reached the service (%d calls)", n-before-1)
			}

			// The export name of an imported tool reaches it.
			if o := face.call("notes_NotesService_CreateNote", map[string]any{"title": "by export name"}); !o.ok {
				t.Fatalf("call by export name: %s", o.msg)
			}
			if last := notes.Service.Created(); last[len(last)-1].GetTitle() != "by export name" {
				t.Errorf("the service received %v", last[len(last)-1])
			}
		})
	}

	// Every imported tool exports to OpenAI and Anthropic under its
	// provider-safe name; no format leaves one out for its name (strict
	// mode and Gemini cannot express some of CreateNote's schema: maps,
	// recursion, the oneof's not).
	for _, f := range []string{"openai", "anthropic", "openai-strict", "gemini"} {
		resp, err := rc.ExportTools(invoker, &gatewayv1.ExportToolsRequest{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range resp.GetLeftOut() {
			for _, fd := range l.GetFindings() {
				if fd.GetPath() == "/name" || f == "openai" || f == "anthropic" {
					t.Errorf("%s leaves out %s: %v", f, l.GetName(), fd)
				}
			}
		}
		want := []string{`"notes_NotesService_Ping"`, `"notes_NotesService_GetNote"`, `"create_team_note"`}
		if f == "openai" || f == "anthropic" {
			want = append(want, `"notes_NotesService_CreateNote"`)
		}
		for _, w := range want {
			if !strings.Contains(resp.GetToolsJson(), w) {
				t.Errorf("%s export has no %s", f, w)
			}
		}
		if strings.Contains(resp.GetToolsJson(), `"notes.NotesService`) {
			t.Errorf("%s export names a tool with a '.'", f)
		}
	}

	lines, _ := auditLines(t, env, auditPath)
	var alias, exported int
	for _, l := range lines {
		if _, write := l["operation"]; write {
			continue // a registry write's line
		}
		switch {
		case l["tool"] == "create_team_note" && l["decision"] == "allow":
			alias++
			if l["target"] != aliasTarget {
				t.Errorf("alias call's audit line names target %v, want %s", l["target"], aliasTarget)
			}
		case l["tool"] == aliasTarget && l["decision"] == "allow":
			exported++
			if _, ok := l["target"]; ok {
				t.Errorf("a direct call's audit line names a target: %v", l)
			}
		}
	}
	if alias != len(faces) || exported != len(faces) {
		t.Errorf("audit: %d allowed alias calls and %d by export name (under the registered name), want %d each", alias, exported, len(faces))
	}
}

// TestExportNameReachesItsTool: a ToolBackendService tool registered as
// team.echo, called by its export name team_echo on every path — gRPC
// InvokeTool (whose received message otherwise heads the backend request
// as it came, naming the tool as called), arguments_json, MCP tools/call —
// reaches the backend as team.echo; a name two tools' export names share
// reaches neither.
func TestExportNameReachesItsTool(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	opts := []gatewaytest.Option{gatewaytest.WithMCP()}
	for _, name := range []string{"team.echo", "a.b", "a_b"} {
		opts = append(opts, gatewaytest.WithTool(gatewaytest.ObjectTool(name)),
			gatewaytest.WithBackendHandler(name, func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
				return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("ok")}, nil
			}))
	}
	env := gatewaytest.Start(t, opts...)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	calls := []struct {
		name string
		call func(tool string) error
	}{
		{"grpc", func(tool string) error {
			_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, map[string]any{"x": "1"})})
			return err
		}},
		{"grpc-arguments-json", func(tool string) error {
			_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, ArgumentsJson: `{"x":"2"}`})
			return err
		}},
		{"mcp", func(tool string) error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"x": "3"}})
			if err == nil && res.IsError {
				return status.Error(codes.Unknown, resultText(res))
			}
			return err
		}},
	}
	for _, c := range calls {
		if err := c.call("team_echo"); err != nil {
			t.Errorf("%s: call by export name: %v", c.name, err)
		}
	}
	if got, wrong := len(env.Backend.CallsFor("team.echo")), len(env.Backend.CallsFor("team_echo")); got != len(calls) || wrong != 0 {
		t.Errorf("the backend received %d calls for team.echo and %d for team_echo, want %d and 0", got, wrong, len(calls))
	}
	// a_b is registered: its own name wins, a.b is never reached by it.
	before := len(env.Backend.CallsFor("a.b"))
	for _, c := range calls {
		if err := c.call("a_b"); err != nil {
			t.Errorf("%s: a_b: %v", c.name, err)
		}
	}
	if n := len(env.Backend.CallsFor("a.b")); n != before {
		t.Errorf("a call to a_b reached a.b (%d calls)", n-before)
	}
}

// TestAliasInjectsAJWTClaim: an alias injecting claim:tenant sends the
// backend the tenant of the caller's verified JWT; a caller whose token
// has no tenant claim is refused (PermissionDenied) and nothing is sent.
func TestAliasInjectsAJWTClaim(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	signer := newJWTSigner(t)
	echo := func(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		return &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(req.GetArguments())}, nil
	}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(signer)),
		gatewaytest.WithTool(func(backend string) registry.Tool {
			return registry.Tool{Name: "acct.search", Backend: backend, InputSchema: mustStructT(t, map[string]any{"type": "object",
				"properties": map[string]any{"q": map[string]any{"type": "string"}, "tenant": map[string]any{"type": "string"}}})}
		}), gatewaytest.WithBackendHandler("acct.search", echo))
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	alias := &gatewayv1.Tool{Name: "search_mine", Description: "Search your tenant.",
		InputSchema: mustStructT(t, map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}),
		Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_Alias{Alias: &gatewayv1.ToolAlias{Target: "acct.search",
			InjectedArguments: map[string]string{"tenant": "claim:tenant"}}}}}
	if _, err := rc.RegisterTool(withKeyCtx(ctx, keyAdmin), &gatewayv1.RegisterToolRequest{Tool: alias}); err != nil {
		t.Fatal(err)
	}
	withTenant := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": jwtIssuer, "aud": jwtAud, "sub": "agent-jwt",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Add(-time.Minute).Unix(), "roles": []string{policy.RoleInvoker}, "tenant": "acme"})
	withTenant.Header["kid"] = "e2e"
	signed, err := withTenant.SignedString(signer.key)
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	resp, err := env.Client.InvokeTool(bearer(signed), &gatewayv1.InvokeToolRequest{Tool: "search_mine", Arguments: gatewaytest.Args(t, map[string]any{"q": "x"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetResult().GetStructValue().AsMap(); got["tenant"] != "acme" || got["q"] != "x" {
		t.Errorf("the backend received %v, want q and the token's tenant", got)
	}
	before := len(env.Backend.CallsFor("acct.search"))
	_, err = env.Client.InvokeTool(bearer(signer.token(t, jwtAud, time.Now().Add(time.Hour), policy.RoleInvoker)),
		&gatewayv1.InvokeToolRequest{Tool: "search_mine", Arguments: gatewaytest.Args(t, map[string]any{"q": "x"})})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "claim:tenant") {
		t.Errorf("a token without the claim: %v, want PermissionDenied naming it", err)
	}
	if n := len(env.Backend.CallsFor("acct.search")); n != before {
		t.Errorf("a refused call reached the backend")
	}
}
