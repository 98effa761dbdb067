package grpcapi

import (
	"context"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// registryWriteAudit gives every RegisterTool, DeleteTool, ApprovePendingChange,
// RejectPendingChange, PutBundle and DeleteBundle an audit line
// (pipeline.AuditRecorder.RecordRegistryWrite): who, which tool, applied
// or refused and why, the revision made. It runs outside authentication,
// so a write refused for its credential is on record too (without a
// caller); registryWriteCaller, inside it, names the authenticated caller
// and refuses the write while fail-closed audit cannot record it. Other
// methods pass through.
func registryWriteAudit(a *pipeline.AuditRecorder) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		var op, tool string
		switch r := req.(type) {
		case *gatewayv1.RegisterToolRequest:
			op, tool = "RegisterTool", r.GetTool().GetName()
		case *gatewayv1.DeleteToolRequest:
			op, tool = "DeleteTool", r.GetName()
		case *gatewayv1.ApprovePendingChangeRequest:
			op, tool = "ApprovePendingChange", r.GetName()
		case *gatewayv1.RejectPendingChangeRequest:
			op, tool = "RejectPendingChange", r.GetName()
		case *gatewayv1.PutBundleRequest:
			// A bundle's line names it where a tool's names the tool, as
			// a federated request's names its resource or prompt.
			op, tool = "PutBundle", r.GetBundle().GetName()
		case *gatewayv1.DeleteBundleRequest:
			op, tool = "DeleteBundle", r.GetName()
		}
		if op == "" || a == nil {
			return h(ctx, req)
		}
		w := &registryWriteLine{RegistryWrite: pipeline.RegistryWrite{Start: time.Now(), Operation: op, Tool: tool}}
		resp, err := h(context.WithValue(ctx, registryWriteKey{}, w), req)
		if w.unrecordable {
			return resp, err // refused because no line can be written now
		}
		w.Decision, w.Reason = registryDecision(err)
		switch r := resp.(type) {
		case *gatewayv1.RegisterToolResponse:
			w.Revision = r.GetTool().GetRevision()
		case *gatewayv1.ApprovePendingChangeResponse:
			w.Revision = r.GetTool().GetRevision()
		case *gatewayv1.RejectPendingChangeResponse:
			w.Revision = r.GetTool().GetRevision()
		case *gatewayv1.PutBundleResponse:
			w.Revision = r.GetBundle().GetRevision()
		}
		if e := a.RecordRegistryWrite(ctx, w.RegistryWrite); e != nil {
			return nil, Status(e).Err()
		}
		return resp, err
	}
}

// registryWriteLine is one registry write's line while the write runs.
type registryWriteLine struct {
	pipeline.RegistryWrite
	unrecordable bool // refused up front: fail-closed audit cannot write
}

type registryWriteKey struct{}

// registryWriteCaller runs after authentication and before the role check
// (so a caller without the admin role trying to write is on record with
// its name): it names the caller to the store's revision history, puts it
// on the write's line and, under fail-closed audit, refuses the write
// while the log cannot be written.
func registryWriteCaller(a *pipeline.AuditRecorder) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if c, ok := policy.CallerFrom(ctx); ok {
			// The store's revision history names the writer, audit or not.
			ctx = registry.WithWriter(ctx, c.Subject)
		}
		w, _ := ctx.Value(registryWriteKey{}).(*registryWriteLine)
		if w == nil {
			return h(ctx, req)
		}
		w.Caller, w.HasCaller = policy.CallerFrom(ctx)
		if e := a.BeginRegistryWrite(w.Tool); e != nil {
			w.unrecordable = true
			return nil, Status(e).Err()
		}
		return h(ctx, req)
	}
}

// registryDecision is a registry write's decision and reason from its
// status: applied; refused by authentication or authorization (deny); or
// refused otherwise (error), with the ErrorInfo reason when there is one,
// else the code's name in lower case.
func registryDecision(err error) (decision, reason string) {
	st := status.Convert(err)
	switch st.Code() {
	case codes.OK:
		return policy.DecisionAllow, ""
	case codes.PermissionDenied, codes.Unauthenticated:
		decision = policy.DecisionDeny
	default:
		decision = policy.DecisionError
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() != "" {
			return decision, reasonFromErrorInfo(info)
		}
	}
	return decision, strings.ToLower(st.Code().String())
}
