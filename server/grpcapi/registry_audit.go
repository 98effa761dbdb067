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
	"github.com/flowdrop/gateway/server/pipeline"
)

// registryWriteAudit gives every RegisterTool and DeleteTool an audit line
// (pipeline.AuditRecorder.RecordRegistryWrite): who, which tool, applied
// or refused and why, the revision made. It runs after authentication
// (the caller is known) and before the role check, so a caller without
// the admin role trying to write is on record too. Under fail-closed
// audit a write is refused while the log cannot be written. Other methods
// pass through.
func registryWriteAudit(a *pipeline.AuditRecorder) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		var op, tool string
		switch r := req.(type) {
		case *gatewayv1.RegisterToolRequest:
			op, tool = "RegisterTool", r.GetTool().GetName()
		case *gatewayv1.DeleteToolRequest:
			op, tool = "DeleteTool", r.GetName()
		}
		if op == "" || a == nil {
			return h(ctx, req)
		}
		w := pipeline.RegistryWrite{Start: time.Now(), Operation: op, Tool: tool}
		w.Caller, w.HasCaller = policy.CallerFrom(ctx)
		if e := a.BeginRegistryWrite(tool); e != nil {
			return nil, Status(e).Err()
		}
		resp, err := h(ctx, req)
		w.Decision, w.Reason = registryDecision(err)
		if r, ok := resp.(*gatewayv1.RegisterToolResponse); ok && err == nil {
			w.Revision = r.GetTool().GetRevision()
		}
		if e := a.RecordRegistryWrite(ctx, w); e != nil {
			return nil, Status(e).Err()
		}
		return resp, err
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
