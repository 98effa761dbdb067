package server_test

// Upstream MCP tools end to end: a real go-sdk MCP server over streamable
// HTTP (internal/mcpupstreamtest), its tools imported with
// internal/mcpimport (what `flowdropctl tools import mcp` runs) under a
// prefix, registered through ToolRegistryService, and called over the
// gateway's gRPC InvokeTool and its MCP tools/call.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/types/known/durationpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// importUpstream imports every tool of the upstream at upURL under prefix,
// with credFile as the stored credential reference, and registers them as
// an admin; it returns the names registered.
func importUpstream(t *testing.T, ctx context.Context, env *gatewaytest.Env, upURL, credFile, prefix string) []string {
	t.Helper()
	ref := mcpupstream.Reference{File: credFile}
	h, _, err := ref.Load()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcpupstream.Connect(ctx, upURL, h, mcpupstream.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := mcpimport.List(ctx, cs)
	cs.Close()
	if err != nil {
		t.Fatal(err)
	}
	tools, skipped, err := mcpimport.Tools(listed, mcpimport.Options{URL: upURL, Prefix: prefix, CredentialFile: credFile})
	if err != nil || len(skipped) != 0 {
		t.Fatalf("mcpimport.Tools: %v, skipped %v", err, skipped)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	var names []string
	for _, tool := range tools {
		if _, err := rc.RegisterTool(withKeyCtx(ctx, keyOps), &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tool.GetName(), err)
		}
		names = append(names, tool.GetName())
	}
	return names
}

// withKeyCtx is withKey under ctx's deadline.
func withKeyCtx(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-api-key", key)
}

func TestMCPUpstreamTools(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := mcpupstreamtest.Start(t)
	secret := make([]byte, 16)
	rand.Read(secret)
	token := "tok-" + hex.EncodeToString(secret)
	credFile := filepath.Join(t.TempDir(), "upstream.header")
	if err := os.WriteFile(credFile, []byte(mcpupstreamtest.CredentialHeader+": "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	p := internalsPolicy()
	p.Authz.Default = policy.ToolAccess{Allow: []string{"up.*", "blocked.*"}, Deny: []string{"blocked.*"}}
	p.Rules = append(p.Rules, policy.Rule{Name: "no-forbidden-items", Tools: []string{"up.add_items"},
		Expr: `!args.items.exists(i, i.title == "forbidden")`})
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithMCP(), declareCredential("", credFile, up.URL),
		gatewaytest.WithConfig(func(c *server.Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) }))

	names := importUpstream(t, ctx, env, up.URL, credFile, "up.")
	if want := []string{"up.add_items", "up.refuse", "up.say_hello", "up.wait"}; !slices.Equal(names, want) {
		t.Errorf("imported %v, want %v (sorted, \"say hello\" mapped to say_hello)", names, want)
	}
	importUpstream(t, ctx, env, up.URL, credFile, "blocked.")

	// Registry reads: an invoker sees neither the URL nor the credential
	// reference; an admin sees both; nobody sees the credential.
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, tc := range []struct {
		name, key, wantURL, wantFile, reason string
	}{
		{"invoker", keyInvoker, "", "", "an invoker needs the tool, not where it runs or how the gateway authenticates there"},
		{"admin", keyOps, up.URL, credFile, "an admin registered the upstream and its credential reference"},
	} {
		got, err := rc.GetTool(withKeyCtx(ctx, tc.key), &gatewayv1.GetToolRequest{Name: "up.add_items"})
		if err != nil {
			t.Fatalf("%s GetTool: %v", tc.name, err)
		}
		m := got.GetTool().GetSpec().GetMcpTool()
		if m == nil || m.GetTool() != "add_items" || m.GetUrl() != tc.wantURL || m.GetCredentialFile() != tc.wantFile {
			t.Errorf("%s GetTool spec %v, want url %q, file %q (%s)", tc.name, m, tc.wantURL, tc.wantFile, tc.reason)
		}
		list, err := rc.ListTools(withKeyCtx(ctx, tc.key), &gatewayv1.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if text := prototext.Format(got) + prototext.Format(list); strings.Contains(text, token) {
			t.Errorf("%s: a registry read carries the credential", tc.name)
		}
	}

	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})
	type outcome struct {
		value   any
		isError bool
		code    codes.Code
		msg     string
	}
	faces := []struct {
		name string
		call func(tool string, args map[string]any) outcome
	}{
		{"grpc", func(tool string, args map[string]any) outcome {
			resp, err := env.Client.InvokeTool(withKeyCtx(ctx, keyInvoker), &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, args)})
			if err != nil {
				st := status.Convert(err)
				return outcome{code: st.Code(), msg: statusText(err)}
			}
			return outcome{value: resp.GetResult().AsInterface(), isError: resp.GetIsError()}
		}},
		{"mcp", func(tool string, args map[string]any) outcome {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				return outcome{code: codes.Unknown, msg: err.Error()}
			}
			// The blocks as sent (TestMCPUpstreamContentPassesWhole holds
			// them whole), their texts joined as gRPC's result joins them.
			var texts []string
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					texts = append(texts, tc.Text)
				}
			}
			text := strings.Join(texts, "\n")
			var v any = text
			if res.StructuredContent != nil {
				b, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(b, &v)
			}
			if res.IsError {
				return outcome{value: v, isError: true, msg: text}
			}
			return outcome{value: v}
		}},
	}
	doublyEscaped := `[{"title":"Ember &amp;amp; Oak"}]` // a stringified array holding an entity escaped twice
	for _, face := range faces {
		t.Run(face.name, func(t *testing.T) {
			before := len(up.Args())
			got := face.call("up.add_items", map[string]any{"items": doublyEscaped})
			want := map[string]any{"count": float64(1), "titles": []any{"Ember & Oak"}}
			if got.code != codes.OK || got.isError || !reflect.DeepEqual(got.value, want) {
				t.Fatalf("add_items: %+v, want the upstream's structured content %v", got, want)
			}
			args := up.Args()
			if len(args) != before+1 {
				t.Fatalf("the upstream received %d calls, want 1", len(args)-before)
			}
			var received any
			json.Unmarshal(args[len(args)-1], &received)
			if wantArgs := map[string]any{"items": []any{map[string]any{"title": "Ember & Oak"}}}; !reflect.DeepEqual(received, wantArgs) {
				t.Errorf("the upstream received %s, want %v: the array decoded and the entity resolved fully", args[len(args)-1], wantArgs)
			}

			cases := []struct {
				name, reason string
				tool         string
				args         map[string]any
				want         outcome // code for gRPC; MCP: an error result
				wantIn       string
			}{
				{name: "text", reason: "gRPC's result is the text blocks joined by newlines when there is no structured content; MCP has the blocks",
					tool: "up.say_hello", args: map[string]any{"name": "Ada"}, want: outcome{value: "hello\nAda"}},
				{name: "is-error", reason: "the upstream's isError is the tool error on both faces",
					tool: "up.refuse", args: map[string]any{}, want: outcome{value: "upstream says no", isError: true}},
				{name: "rule", reason: "a CEL rule on the prefixed name sees the repaired arguments",
					tool: "up.add_items", args: map[string]any{"items": `[{"title":"forbidden"}]`},
					want: outcome{code: codes.PermissionDenied}, wantIn: "no-forbidden-items"},
				{name: "deny", reason: "authz deny patterns apply to the prefixed names",
					tool: "blocked.say_hello", args: map[string]any{"name": "Ada"},
					want: outcome{code: codes.PermissionDenied}, wantIn: "blocked.say_hello"},
			}
			for _, tc := range cases {
				got := face.call(tc.tool, tc.args)
				switch {
				case tc.want.code != codes.OK && face.name == "grpc":
					if got.code != tc.want.code || !strings.Contains(got.msg, tc.wantIn) {
						t.Errorf("%s: %+v, want %v naming %q (%s)", tc.name, got, tc.want.code, tc.wantIn, tc.reason)
					}
				case tc.want.code != codes.OK: // the MCP face answers a denial as its other tools' (an error result or a JSON-RPC error)
					if (!got.isError && got.code == codes.OK) || !strings.Contains(got.msg, tc.wantIn) {
						t.Errorf("%s: %+v, want a refusal naming %q (%s)", tc.name, got, tc.wantIn, tc.reason)
					}
				case got.code != codes.OK || got.isError != tc.want.isError || !reflect.DeepEqual(got.value, tc.want.value):
					t.Errorf("%s: %+v, want %+v (%s)", tc.name, got, tc.want, tc.reason)
				}
			}
		})
	}

	// The credential reached the upstream as its header on every request.
	for i, c := range up.Credentials() {
		if c != token {
			t.Fatalf("upstream request %d carried credential %q, want the file's header value", i, c)
		}
	}

	// A slow upstream: DeadlineExceeded naming the tool and its timeout,
	// not the URL.
	wait, err := rc.GetTool(withKeyCtx(ctx, keyOps), &gatewayv1.GetToolRequest{Name: "up.wait"})
	if err != nil {
		t.Fatal(err)
	}
	wait.GetTool().Timeout = durationpb.New(300 * time.Millisecond)
	if _, err := rc.RegisterTool(withKeyCtx(ctx, keyOps), &gatewayv1.RegisterToolRequest{Tool: wait.GetTool()}); err != nil {
		t.Fatal(err)
	}
	got := faces[0].call("up.wait", map[string]any{})
	if u, _ := url.Parse(up.URL); got.code != codes.DeadlineExceeded || !strings.Contains(got.msg, "up.wait") ||
		!strings.Contains(got.msg, "the tool's timeout") || strings.Contains(got.msg, u.Host) {
		t.Errorf("a slow upstream: %+v, want DeadlineExceeded naming the tool and its timeout, not %s", got, u.Host)
	}

	// The upstream restarted (its sessions gone) with the credential
	// rotated: the next call is answered, over a new session presenting the
	// new credential.
	rotated := token + "-rotated"
	if err := os.WriteFile(credFile, []byte(mcpupstreamtest.CredentialHeader+": "+rotated+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up.Restart(t)
	seen := len(up.Credentials())
	if got := faces[0].call("up.say_hello", map[string]any{"name": "Ada"}); got.code != codes.OK || got.value != "hello\nAda" {
		t.Errorf("after the upstream restarted: %+v, want the answer over a new session", got)
	}
	if creds := up.Credentials(); len(creds) <= seen || creds[len(creds)-1] != rotated {
		t.Errorf("after the restart the upstream saw %q, want the rotated credential", creds[seen:])
	}

	// The upstream killed: Unavailable naming the tool, not the URL.
	up.Close()
	u, _ := url.Parse(up.URL)
	for _, face := range faces {
		got := face.call("up.say_hello", map[string]any{"name": "Ada"})
		if face.name == "grpc" && got.code != codes.Unavailable {
			t.Errorf("%s: upstream gone: %+v, want Unavailable", face.name, got)
		}
		if face.name == "mcp" && !got.isError {
			t.Errorf("%s: upstream gone: %+v, want an isError result", face.name, got)
		}
		if !strings.Contains(got.msg, "up.say_hello") || strings.Contains(got.msg, u.Host) || strings.Contains(got.msg, credFile) {
			t.Errorf("%s: upstream gone: %q, want the tool named and neither %s nor the credential file", face.name, got.msg, u.Host)
		}
	}
	if l := logs.String(); strings.Contains(l, token) || strings.Contains(l, rotated) {
		t.Errorf("the gateway's log carries the credential")
	} else if !strings.Contains(l, u.Host) {
		t.Errorf("no log line names the unreachable upstream %s; operators need it", u.Host)
	}
}

// TestMCPUpstreamListChanged: the upstream removes a tool and changes
// another's input schema, and says so (notifications/tools/list_changed):
// with a policy that auto-approves every kind of change
// (mcp_upstreams.auto_approve; by default each is held for an admin:
// mcppin_e2e_test.go), the gateway's registry drops the first and stores
// the second as a new revision, and the gateway's own MCP clients are told
// their list changed. Both writes are on the audit log as the gateway's
// own. The re-list interval is an hour: only the notification can do it.
func TestMCPUpstreamListChanged(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := mcpupstreamtest.Start(t)
	p := server.DemoPolicy()
	p.MCPUpstreams.RelistInterval = time.Hour
	p.MCPUpstreams.AutoApprove = registry.ChangeKindNames
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit = server.AuditConfig{Path: auditPath}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))
	importUpstream(t, ctx, env, up.URL, "", "up.")
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	before, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "up.say_hello"})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{onChange: func() { changed <- struct{}{} }})
	for up.Listeners() == 0 { // the gateway's notification session is up (bounded by ctx)
		select {
		case <-ctx.Done():
			t.Fatal("the gateway opened no notification stream to the upstream")
		case <-time.After(10 * time.Millisecond):
		}
	}

	up.MCP.RemoveTools("refuse")
	type politeIn struct {
		Name  string `json:"name"`
		Title string `json:"title"`
	}
	mcp.AddTool(up.MCP, &mcp.Tool{Name: "say hello", Description: "Greets, politely."},
		func(context.Context, *mcp.CallToolRequest, politeIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
		})

	var changedRevision int64
	for {
		_, errGone := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "up.refuse"})
		now, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "up.say_hello"})
		if err != nil {
			t.Fatal(err)
		}
		_, hasTitle := now.GetTool().GetInputSchema().GetFields()["properties"].GetStructValue().GetFields()["title"]
		if status.Code(errGone) == codes.NotFound && hasTitle {
			if now.GetTool().GetRevision() <= before.GetTool().GetRevision() || now.GetTool().GetDescription() != "Greets, politely." {
				t.Errorf("up.say_hello after the change: %v, want a new revision with the new description", now.GetTool())
			}
			if now.GetTool().GetSpec().GetMcpTool().GetTool() != "say hello" {
				t.Errorf("up.say_hello's spec %v: the upstream name must be kept", now.GetTool().GetSpec())
			}
			changedRevision = now.GetTool().GetRevision()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the registry did not follow the upstream: up.refuse %v, up.say_hello %v", errGone, now.GetTool())
		case <-time.After(100 * time.Millisecond): // under the registry's rate limit
		}
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the gateway's MCP client got no list_changed")
	}
	for { // the gateway's MCP face syncs from the registry (bounded by ctx)
		names := toolNames(t, ctx, cs)
		if !slices.Contains(names, "up.refuse") && slices.Contains(names, "up.say_hello") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway's MCP tools %v still list up.refuse", names)
		case <-changed:
		case <-time.After(20 * time.Millisecond):
		}
	}

	lines, raw := auditLines(t, env, auditPath)
	var own []map[string]any
	for _, l := range lines {
		if l["operation"] != nil && l["caller_method"] == policy.MethodInternal {
			own = append(own, l)
		}
	}
	want := []map[string]any{
		{"operation": "DeleteTool", "tool": "up.refuse", "decision": "allow", "reason": "mcp-upstream-auto-approved", "caller_subject": "flowdrop-gateway"},
		{"operation": "RegisterTool", "tool": "up.say_hello", "decision": "allow", "reason": "mcp-upstream-auto-approved", "revision": float64(changedRevision)},
	}
	slices.SortFunc(own, func(a, b map[string]any) int {
		return strings.Compare(fmt.Sprint(a["operation"]), fmt.Sprint(b["operation"]))
	})
	matchLines(t, "the gateway's own registry-write", own, want, raw)
}
