package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestPolicyAuthorize(t *testing.T) {
	az, err := NewAuthorizer(AuthzConfig{
		Callers: map[string]ToolAccess{
			"ci-bot": {Allow: []string{"fs.*", "shell.run"}, Deny: []string{"fs.delete*"}},
			"admin":  {},
		},
		Default: ToolAccess{Allow: []string{"search.*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	invoker := Caller{Subject: "ci-bot", Method: MethodAPIKey, Roles: []string{RoleInvoker}}
	admin := Caller{Subject: "admin", Method: MethodAPIKey, Roles: []string{RoleAdmin}}
	stranger := Caller{Subject: "someone", Method: MethodJWT, Roles: []string{RoleInvoker}}

	methods := []struct {
		reason     string
		caller     Caller
		method     string
		wantReason string
	}{
		{"invoker may invoke", invoker, "/flowdrop.gateway.v1.ToolGatewayService/InvokeTool", ""},
		{"admin may not invoke: admin does not imply invoker", admin, "/flowdrop.gateway.v1.ToolGatewayService/InvokeTool", ReasonRoleMissing},
		{"invoker may not register tools", invoker, "/flowdrop.gateway.v1.ToolRegistryService/RegisterTool", ReasonRoleMissing},
		{"admin may register tools", admin, "/flowdrop.gateway.v1.ToolRegistryService/RegisterTool", ""},
		{"invoker may list tools", invoker, "/flowdrop.gateway.v1.ToolRegistryService/ListTools", ""},
		{"no roles at all", Caller{Subject: "x"}, "/flowdrop.gateway.v1.ToolRegistryService/ListTools", ReasonRoleMissing},
		{"unlisted method fails closed", admin, "/other.Service/Do", ReasonMethodUnknown},
	}
	for _, tc := range methods {
		t.Run(tc.reason, func(t *testing.T) {
			err := az.AllowMethod(tc.caller, tc.method)
			if tc.wantReason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantPolicyError(t, err, PermissionDenied, tc.wantReason)
		})
	}

	tools := []struct {
		reason     string
		caller     Caller
		tool       string
		wantReason string
	}{
		{"allowed by glob", invoker, "fs.read", ""},
		{"allowed exactly", invoker, "shell.run", ""},
		{"not in allow list", invoker, "net.fetch", ReasonToolNotAllowed},
		{"deny beats allow", invoker, "fs.delete_tree", ReasonToolDenied},
		{"empty allow list allows nothing", admin, "fs.read", ReasonToolNotAllowed},
		{"unlisted caller gets the default", stranger, "search.web", ""},
		{"default does not allow others", stranger, "fs.read", ReasonToolNotAllowed},
	}
	for _, tc := range tools {
		t.Run(tc.reason, func(t *testing.T) {
			err := az.AllowTool(tc.caller, tc.tool)
			if tc.wantReason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			pe := wantPolicyError(t, err, PermissionDenied, tc.wantReason)
			if pe.Tool != tc.tool || !contains(pe.Message, tc.tool) {
				t.Fatalf("refusal does not name the tool: %+v", pe)
			}
		})
	}

	got := az.FilterTools(invoker, []string{"search.web", "fs.read", "fs.delete_tree", "shell.run", "net.fetch"})
	if want := []string{"fs.read", "shell.run"}; !slices.Equal(got, want) {
		t.Fatalf("FilterTools = %v, want %v", got, want)
	}
}

func TestPolicyAuthorizerRejectsBadGlob(t *testing.T) {
	_, err := NewAuthorizer(AuthzConfig{Callers: map[string]ToolAccess{"x": {Allow: []string{"fs.["}}}})
	if err == nil || !contains(err.Error(), `"fs.["`) {
		t.Fatalf("err = %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
