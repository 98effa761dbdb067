package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
)

// keyTransport sends an API key with every request.
type keyTransport struct {
	key  string
	base http.RoundTripper
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return k.base.RoundTrip(r)
}

// mcpSession connects the go-sdk's client, named name, as the invoker
// under protocol revision version ("": the SDK's latest).
func mcpSession(t *testing.T, ctx context.Context, url, name, version string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: keyTransport{keyInvoker, http.DefaultTransport.(*http.Transport).Clone()}}
	t.Cleanup(hc.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestToolsStatsBothFaces: calls over gRPC and MCP with a stringified
// array, a double-escaped title and an empty command reach the metrics
// and `flowdropctl tools stats` by field, caller and client, with the
// suggestions those patterns make; a flood of invented field names stays
// within the field cap. Over the MCP face's tools/call fast path and over
// the go-sdk's own handler (--mcp-sdk-only) alike.
func TestToolsStatsBothFaces(t *testing.T) {
	for _, sdkOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("mcp-sdk-only=%v", sdkOnly), func(t *testing.T) { toolsStatsBothFaces(t, sdkOnly) })
	}
}

func toolsStatsBothFaces(t *testing.T, sdkOnly bool) {
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(authPolicy("")), gatewaytest.WithMCP(), gatewaytest.WithAdmin(),
		gatewaytest.WithConfig(func(c *server.Config) { c.MCP.SDKOnly = sdkOnly }))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// gRPC, as a program whose user-agent names it.
	conn, err := grpc.NewClient(env.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent("agent-grpc/2.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gw := gatewayv1.NewToolGatewayServiceClient(conn)
	gctx := metadata.AppendToOutgoingContext(ctx, "x-api-key", keyInvoker)
	invoke := func(tool, argsJSON string) error {
		_, err := gw.InvokeTool(gctx, &gatewayv1.InvokeToolRequest{Tool: tool, ArgumentsJson: argsJSON})
		return err
	}
	for i := range 10 {
		if err := invoke("create_note", fmt.Sprintf(`{"title":"g%d","tags":"[\"a\",\"b\"]"}`, i)); err != nil {
			t.Fatalf("gRPC create_note: %v", err)
		}
	}
	for range 6 {
		if err := invoke("run_command", `{"command":""}`); err == nil {
			t.Fatal("an empty command was accepted")
		}
	}

	// MCP: a 2026-07-28 client names itself on every request; an older
	// one's initialize is a request of its own (the face is stateless), so
	// its User-Agent names it.
	latest := mcpSession(t, ctx, env.MCPURL, "claude-test", "")
	older := mcpSession(t, ctx, env.MCPURL, "unseen-name", "2025-06-18")
	for i := range 10 {
		res, err := latest.CallTool(ctx, &mcp.CallToolParams{Name: "create_note",
			Arguments: map[string]any{"title": fmt.Sprintf("Tom &amp;amp; Jerry %d", i), "tags": `["x"]`}})
		if err != nil || res.IsError {
			t.Fatalf("MCP create_note: %v %+v", err, res)
		}
	}
	for range 4 {
		res, err := older.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": ""}})
		if err != nil || !res.IsError {
			t.Fatalf("MCP run_command with an empty command: %v %+v; want a tool error", err, res)
		}
	}

	// flowdropctl as the admin.
	t.Setenv(envAPIKey, keyAdmin)
	code, out, errOut := ctl(t, "tools", "stats", "--addr", env.Addr)
	if code != 0 {
		t.Fatalf("tools stats: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"create_note: 20 calls, 0 failed validation",
		"/tags   repair:json-decoded       invoker  agent-grpc   10",
		"/tags   repair:json-decoded       invoker  claude-test  10",
		"/title  repair:entities-decoded   invoker  claude-test  10",
		"suggest (document-shape): `/tags` arrived as a JSON-encoded string in 100% of calls (20 of 20)",
		"suggest (note-client): `/title` arrived HTML-escaped in 50% of calls (10 of 20), from client \"claude-test\"",
		"run_command: 10 calls, 10 failed validation",
		"/command  invalid:minLength  invoker  agent-grpc      6",
		"/command  invalid:minLength  invoker  Go-http-client  4",
		"suggest (relax-or-describe): `/command` failed `minLength` in 100% of failed calls (10 of 10)",
	} {
		// Columns compared word by word (tabwriter pads them).
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("tools stats lacks %q:\n%s", want, out)
		}
	}
	// One tool; an unregistered one is NotFound; a bad name is refused.
	if code, out, _ := ctl(t, "tools", "stats", "run_command", "--addr", env.Addr); code != 0 || strings.Contains(out, "create_note") || !strings.Contains(out, "run_command: 10 calls") {
		t.Errorf("tools stats run_command: exit %d\n%s", code, out)
	}
	if code, _, errOut := ctl(t, "tools", "stats", "no_such_tool", "--addr", env.Addr); code != 1 || !strings.Contains(errOut, "NotFound") {
		t.Errorf("tools stats no_such_tool: exit %d\n%s; want NotFound", code, errOut)
	}
	// The invoker may not read them (admin role).
	t.Setenv(envAPIKey, keyInvoker)
	if code, _, errOut := ctl(t, "tools", "stats", "--addr", env.Addr); code != 1 || !strings.Contains(errOut, "PermissionDenied") {
		t.Errorf("tools stats as the invoker: exit %d\n%s; want PermissionDenied", code, errOut)
	}

	// The same counts as metrics.
	metrics := scrape(t, env.AdminURL)
	for _, want := range []string{
		`flowdrop_repair_field_calls_total{caller="invoker",client="agent-grpc",field="/tags",kind="json-decoded",tool="create_note"} 10`,
		`flowdrop_repair_field_calls_total{caller="invoker",client="claude-test",field="/title",kind="entities-decoded",tool="create_note"} 10`,
		`flowdrop_validation_field_failures_total{caller="invoker",client="Go-http-client",field="/command",keyword="minLength",tool="run_command"} 4`,
		`flowdrop_repair_analytics_calls_total{tool="create_note"} 20`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A flood of invented field names: each is a failure at its own
	// pointer, kept to the field cap (64) and the rest under _other.
	for i := range 100 {
		if err := invoke("update_settings", fmt.Sprintf(`{"settings":{},"x%d":1}`, i)); err == nil {
			t.Fatal("an unknown argument was accepted")
		}
	}
	t.Setenv(envAPIKey, keyAdmin)
	code, out, errOut = ctl(t, "tools", "stats", "update_settings", "--output", "json", "--addr", env.Addr)
	if code != 0 {
		t.Fatalf("tools stats --output json: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Tools []struct {
			FailedCalls string `json:"failed_calls"`
			Rows        []struct {
				Field string
				Calls string
			}
		}
		Overflow map[string]string
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Tools) != 1 {
		t.Fatalf("--output json: %v\n%s", err, out)
	}
	fields := map[string]bool{}
	for _, r := range doc.Tools[0].Rows {
		fields[r.Field] = true
	}
	if len(fields) != 65 || !fields["_other"] || doc.Overflow["field"] != "36" || doc.Tools[0].FailedCalls != "100" {
		t.Errorf("after 100 invented names: %d fields (want 64 and _other), field overflow %q (want 36), failed %q", len(fields), doc.Overflow["field"], doc.Tools[0].FailedCalls)
	}
}

func scrape(t *testing.T, adminURL string) string {
	t.Helper()
	resp, err := http.Get(adminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
