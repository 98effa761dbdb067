package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/server/pipeline"
)

// reasonError is an Error with reason r as its producers make it: its row's
// code (a backend's own code for backend-error), and the Kind its audit
// decision implies.
func reasonError(r pipeline.Reason, s pipeline.ReasonSpec) *pipeline.Error {
	e := &pipeline.Error{Code: s.Code, Reason: r, Tool: "t", Message: "m", RetryAfter: time.Second}
	if s.Code == pipeline.CodeOfError {
		e.Code = pipeline.PermissionDenied
	}
	switch {
	case r == pipeline.ReasonArgumentsInvalid:
		e.Kind = pipeline.KindValidation
	case s.Decision == policy.DecisionDeny:
		e.Kind = pipeline.KindPolicy
	}
	if r == pipeline.ReasonInputUnsupported {
		// As a 2026-07-28 caller's round gets it: naming the capability.
		e.Required = []string{pipeline.InputElicitation}
	}
	if r == pipeline.ReasonIdentityConsentRequired {
		e.AuthorizationURL = "https://gw.example/oauth/upstream/start?s=x"
	}
	return e
}

// mcpOutcome is what callError answered, as a row's MCPOutcome.
func mcpOutcome(t *testing.T, r pipeline.Reason, res *callResult, err error) pipeline.MCPOutcome {
	t.Helper()
	var rpc *jsonrpc.Error
	switch {
	case err == nil && res != nil && res.IsError:
		if got := res.Meta[MCPMetaReason]; got != string(r) {
			t.Errorf("%s: isError result's %s = %v", r, MCPMetaReason, got)
		}
		return pipeline.MCPToolError
	case errors.Is(err, context.Canceled):
		return pipeline.MCPCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return pipeline.MCPDeadline
	case errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams:
		return pipeline.MCPInvalidParams
	case errors.As(err, &rpc) && rpc.Code == MCPCodePermissionDenied:
		return pipeline.MCPPermissionDenied
	case errors.As(err, &rpc) && rpc.Code == mcp.CodeMissingRequiredClientCapabilities:
		return pipeline.MCPMissingCapability
	case errors.As(err, &rpc) && rpc.Code == mcp.CodeURLElicitationRequired:
		return pipeline.MCPURLElicitation
	case errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInternalError:
		return pipeline.MCPInternalError
	}
	t.Fatalf("%s: callError answered %+v, %v: no MCP outcome", r, res, err)
	return 0
}

// TestCallErrorFollowsReasonTable: for every reason, the MCP face answers
// what its row says — call-id-invalid is invalid params (gRPC:
// InvalidArgument) and credential-undeclared a tool error (gRPC:
// FailedPrecondition), where both used to fall through to "internal error".
func TestCallErrorFollowsReasonTable(t *testing.T) {
	t.Parallel()
	m := &Server{log: slog.New(slog.DiscardHandler)}
	// A caller that can be sent a URL elicitation (urlelicitation.go).
	ctx := withURLElicitation(t.Context(), RevisionURLElicitation, nil)
	for _, r := range pipeline.Reasons() {
		s, _ := pipeline.SpecOf(r)
		res, err := m.callError(ctx, reasonError(r, s), normalize.Report{})
		if got := mcpOutcome(t, r, res, err); got != s.MCP {
			t.Errorf("%s: MCP outcome %d, row %d", r, got, s.MCP)
		}
	}
}

// TestCallErrorRetryWait: the wait reaches the model's text only for a
// reason a later retry may help.
func TestCallErrorRetryWait(t *testing.T) {
	t.Parallel()
	m := &Server{log: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		reason pipeline.Reason
		want   string
		why    string
	}{
		{policy.ReasonRateLimited, "m (retry after 1s)", "a rate limit: the model can wait"},
		{policy.ReasonRuleDenied, "m", "a rule refuses the same arguments again: no wait to offer"},
		{pipeline.ReasonAuditUnavailable, "m", "the audit message says to try later itself"},
	} {
		s, _ := pipeline.SpecOf(tc.reason)
		res, err := m.callError(t.Context(), reasonError(tc.reason, s), normalize.Report{})
		if err != nil || res == nil || len(res.Content) != 1 {
			t.Fatalf("%s: %+v, %v; want an isError result (%s)", tc.reason, res, err, tc.why)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != tc.want {
			t.Errorf("%s: text %q, want %q (%s)", tc.reason, got, tc.want, tc.why)
		}
	}
}

// TestCallErrorURLElicitation: identity-consent-required is -32042 with a
// URL-mode elicitation of the link for a caller that can be sent one, by
// revision and declared capability, else an isError result naming it.
func TestCallErrorURLElicitation(t *testing.T) {
	t.Parallel()
	m := &Server{log: slog.New(slog.DiscardHandler)}
	urlCaps := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}}
	formCaps := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}}
	for _, tc := range []struct {
		rev    string
		meta   mcp.Meta
		want   bool
		reason string
	}{
		{"2025-06-18", urlCaps, false, "the revision has no URL elicitation"},
		{"", nil, false, "no revision known"},
		{"2025-11-25", nil, true, "a stateless face cannot know a 2025-11-25 caller's capabilities"},
		{"2026-07-28", urlCaps, true, "declared elicitation.url in the request"},
		{"2026-07-28", formCaps, false, "declared form elicitation only"},
		{"2026-07-28", nil, false, "declared nothing"},
	} {
		s, _ := pipeline.SpecOf(pipeline.ReasonIdentityConsentRequired)
		e := reasonError(pipeline.ReasonIdentityConsentRequired, s)
		res, err := m.callError(withURLElicitation(t.Context(), tc.rev, tc.meta), e, normalize.Report{})
		var rpc *jsonrpc.Error
		if tc.want {
			var data struct {
				Elicitations []mcp.ElicitParams `json:"elicitations"`
			}
			if !errors.As(err, &rpc) || rpc.Code != mcp.CodeURLElicitationRequired || json.Unmarshal(rpc.Data, &data) != nil ||
				len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" || data.Elicitations[0].URL != e.AuthorizationURL || data.Elicitations[0].ElicitationID == "" {
				t.Errorf("%s %v: %v; want -32042 with one url elicitation of the link (%s)", tc.rev, tc.meta, err, tc.reason)
			}
			continue
		}
		if err != nil || res == nil || !res.IsError || res.Meta[MCPMetaAuthorizationURL] != e.AuthorizationURL {
			t.Errorf("%s %v: %+v, %v; want an isError result with the link (%s)", tc.rev, tc.meta, res, err, tc.reason)
		}
	}
}
