package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
)

// TestToolsHistory: `tools history` prints the store's kept definitions
// newest first with their writers (the seed has none, an admin's write
// names the operator), with control characters of a registrant's text
// neutralised; --output json gives each definition; a caller without the
// admin role is refused.
func TestToolsHistory(t *testing.T) {
	// The operator may administer and call tools: a registry read shows
	// only the tools its caller may call.
	const keyOperator = "fd_ctl_operator_5e1d0b7a"
	p := authPolicy("")
	p.Auth.APIKeys = append(p.Auth.APIKeys, policy.APIKey{Name: "operator", SHA256: policy.HashAPIKey(keyOperator), Roles: []string{policy.RoleAdmin, policy.RoleInvoker}})
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(env.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc := gatewayv1.NewToolRegistryServiceClient(conn)
	admin := metadata.AppendToOutgoingContext(ctx, "x-api-key", keyOperator)
	cur, err := rc.GetTool(admin, &gatewayv1.GetToolRequest{Name: "create_note"})
	if err != nil {
		t.Fatal(err)
	}
	next := cur.GetTool()
	next.Description = "edited\x1b[2J by the test"
	next.Revision = 0
	if _, err := rc.RegisterTool(admin, &gatewayv1.RegisterToolRequest{Tool: next}); err != nil {
		t.Fatal(err)
	}
	args := func(extra ...string) []string {
		return append([]string{"tools", "history", "create_note", "--addr", env.Addr, "--timeout", "10s"}, extra...)
	}
	for _, tc := range []ctlCase{
		{name: "table", reason: "newest first: the admin's edit (its escape neutralised), then the seed without a writer",
			env: map[string]string{envAPIKey: keyOperator}, args: args(),
			wantStdout: []string{"REVISION", "TIME", "WRITER", "operator", "edited?[2J by the test", "  -  "}},
		{name: "limit", reason: "--limit 1 gives only the newest",
			env: map[string]string{envAPIKey: keyOperator}, args: args("--limit", "1"), wantStdout: []string{"operator"}},
		{name: "json", reason: "--output json gives each definition whole",
			env: map[string]string{envAPIKey: keyOperator}, args: args("--output", "json"), wantStdout: []string{`"writer":"operator"`, `"name":"create_note"`}},
		{name: "not-admin", reason: "the history is the admin's: an invoker is refused",
			env: map[string]string{envAPIKey: keyInvoker}, args: args(), wantCode: 1, wantStderr: []string{"PermissionDenied"}},
		{name: "bad-limit", reason: "a limit past the kept depth is bad usage",
			env: map[string]string{envAPIKey: keyOperator}, args: args("--limit", "21"), wantCode: 2, wantStderr: []string{"--limit must be between 0 and 20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := runCtl(t, tc)
			if tc.name == "limit" && len(splitLines(out)) != 2 {
				t.Errorf("--limit 1 printed %d lines, want the header and one row:\n%s", len(splitLines(out)), out)
			}
			if tc.name == "table" && len(splitLines(out)) != 3 {
				t.Errorf("the table has %d lines, want the header and two rows:\n%s", len(splitLines(out)), out)
			}
		})
	}
}

func splitLines(s string) []string {
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}
