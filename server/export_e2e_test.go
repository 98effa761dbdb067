package server_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// TestExportToolsFollowsVisibility: ExportTools returns exactly the tools
// the caller may invoke (the rule ListTools follows), in the format asked
// for, and never a backend target; a tool the format cannot carry is left
// out with its lint errors; an unknown format is InvalidArgument naming
// the field.
func TestExportToolsFollowsVisibility(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "invoker", SHA256: policy.HashAPIKey("exp-invoker"), Roles: []string{policy.RoleInvoker}},
			{Name: "admin", SHA256: policy.HashAPIKey("exp-admin"), Roles: []string{policy.RoleAdmin}},
			{Name: "limited", SHA256: policy.HashAPIKey("exp-limited"), Roles: []string{policy.RoleInvoker}},
			{Name: "none", SHA256: policy.HashAPIKey("exp-none")},
		}}
		c.Policy.Authz = policy.AuthzConfig{Default: policy.ToolAccess{Allow: []string{"*"}},
			Callers: map[string]policy.ToolAccess{"limited": {Allow: []string{"create_*", "update_*"}}}}
	}))
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	cases := []struct {
		name, reason, key, format string
		code                      codes.Code
		want, leftOut             []string
	}{
		{name: "invoker-openai", reason: "an invoker gets every tool it may call", key: "exp-invoker", format: "openai",
			want: []string{"apply_ops", "create_note", "run_command", "update_settings"}},
		{name: "limited-anthropic", reason: "the allow list narrows the export as it narrows ListTools", key: "exp-limited", format: "anthropic",
			want: []string{"create_note", "update_settings"}},
		{name: "limited-strict", reason: "a free-form object has no strict rewrite: left out, with the lint error", key: "exp-limited", format: "openai-strict",
			want: []string{"create_note"}, leftOut: []string{"update_settings"}},
		{name: "admin", reason: "admin may call no tool, so it exports none", key: "exp-admin", format: "mcp", want: []string{}},
		{name: "no-role", reason: "a caller without a role for the method is refused", key: "exp-none", format: "mcp", code: codes.PermissionDenied},
		{name: "unknown-format", reason: "an unknown format names the field and the formats", key: "exp-invoker", format: "cohere", code: codes.InvalidArgument},
		{name: "no-format", reason: "the format is required", key: "exp-invoker", format: "", code: codes.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := metadata.AppendToOutgoingContext(testCtx(t), "x-api-key", tc.key)
			resp, err := reg.ExportTools(ctx, &gatewayv1.ExportToolsRequest{Format: tc.format})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code %v (%v), want %v (%s)", got, err, tc.code, tc.reason)
			}
			if tc.code == codes.InvalidArgument {
				var field string
				for _, d := range status.Convert(err).Details() {
					if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
						field = br.GetFieldViolations()[0].GetField()
					}
				}
				if field != "format" || !strings.Contains(status.Convert(err).Message(), "openai, openai-strict, anthropic, gemini or mcp") {
					t.Errorf("field %q, message %q (%s)", field, status.Convert(err).Message(), tc.reason)
				}
			}
			if tc.code != codes.OK {
				return
			}
			if strings.Contains(resp.GetToolsJson(), env.BackendAddr) {
				t.Errorf("the export names the backend address (%s)", tc.reason)
			}
			var defs []map[string]any
			if err := json.Unmarshal([]byte(resp.GetToolsJson()), &defs); err != nil {
				t.Fatalf("tools_json: %v", err)
			}
			got := []string{}
			for _, d := range defs {
				name, _ := d["name"].(string)
				if fn, ok := d["function"].(map[string]any); ok {
					name, _ = fn["name"].(string)
				}
				got = append(got, name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("exported %v, want %v (%s)", got, tc.want, tc.reason)
			}
			var left []string
			for _, l := range resp.GetLeftOut() {
				left = append(left, l.GetName())
				if len(l.GetFindings()) == 0 || l.GetFindings()[0].GetSeverity() != "error" {
					t.Errorf("%s left out without its lint errors: %v (%s)", l.GetName(), l.GetFindings(), tc.reason)
				}
			}
			if !slices.Equal(left, tc.leftOut) {
				t.Errorf("left out %v, want %v (%s)", left, tc.leftOut, tc.reason)
			}
		})
	}
}

// TestExportToolsPages: with page_size the export comes in pages of whole
// documents, in name order, each naming the next; a tool the format cannot
// carry counts in its page and is left out there; a bad page_size or
// page_token is InvalidArgument naming the field.
func TestExportToolsPages(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	ctx := testCtx(t)
	pages := func(format string, size int32) (names [][]string, leftOut [][]string) {
		t.Helper()
		token := ""
		for i := 0; ; i++ {
			if i == 10 {
				t.Fatalf("%s: no last page within 10", format)
			}
			resp, err := reg.ExportTools(ctx, &gatewayv1.ExportToolsRequest{Format: format, PageSize: size, PageToken: token})
			if err != nil {
				t.Fatalf("%s page %d: %v", format, i+1, err)
			}
			var defs []struct {
				Name     string
				Function struct{ Name string }
			}
			if err := json.Unmarshal([]byte(resp.GetToolsJson()), &defs); err != nil {
				t.Fatalf("%s page %d is not a document of its own: %v", format, i+1, err)
			}
			var page, left []string
			for _, d := range defs {
				page = append(page, d.Name+d.Function.Name)
			}
			for _, l := range resp.GetLeftOut() {
				left = append(left, l.GetName())
			}
			names, leftOut = append(names, page), append(leftOut, left)
			if token = resp.GetNextPageToken(); token == "" {
				return names, leftOut
			}
		}
	}
	cases := []struct {
		name, reason, format string
		size                 int32
		want, wantLeft       [][]string
	}{
		{"pairs", "pages of two in name order; the last names no next page", "mcp", 2,
			[][]string{{"apply_ops", "create_note"}, {"run_command", "update_settings"}}, [][]string{nil, nil}},
		{"uneven", "a short last page", "anthropic", 3,
			[][]string{{"apply_ops", "create_note", "run_command"}, {"update_settings"}}, [][]string{nil, nil}},
		{"left-out", "a tool left out counts in its page", "openai-strict", 2,
			[][]string{{"apply_ops", "create_note"}, {"run_command"}}, [][]string{nil, {"update_settings"}}},
		{"whole", "0: every tool in one document", "mcp", 0,
			[][]string{{"apply_ops", "create_note", "run_command", "update_settings"}}, [][]string{nil}},
	}
	for _, tc := range cases {
		names, left := pages(tc.format, tc.size)
		if !reflect.DeepEqual(names, tc.want) || !reflect.DeepEqual(left, tc.wantLeft) {
			t.Errorf("%s: pages %v, left out %v; want %v, %v (%s)", tc.name, names, left, tc.want, tc.wantLeft, tc.reason)
		}
	}
	for _, bad := range []struct {
		field string
		req   *gatewayv1.ExportToolsRequest
	}{
		{"page_size", &gatewayv1.ExportToolsRequest{Format: "mcp", PageSize: -1}},
		{"page_token", &gatewayv1.ExportToolsRequest{Format: "mcp", PageToken: "not-a-token"}},
	} {
		_, err := reg.ExportTools(ctx, bad.req)
		var field string
		for _, d := range status.Convert(err).Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
				field = br.GetFieldViolations()[0].GetField()
			}
		}
		if status.Code(err) != codes.InvalidArgument || field != bad.field {
			t.Errorf("bad %s: %v (field %q); want InvalidArgument naming it", bad.field, err, field)
		}
	}
}
