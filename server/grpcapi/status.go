package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/server/pipeline"
)

// This file is THE one place errors become gRPC statuses: a tool call's
// *pipeline.Error (Status), and the registry service's errors
// (registryStatus). Nothing else builds a status from an error.

// ErrorDomain is the google.rpc.ErrorInfo domain of errors the gateway makes.
const ErrorDomain = "flowdrop.dev"

// ReasonArgumentsInvalid is the ErrorInfo reason for arguments that fail the
// tool's schema after normalization.
const ReasonArgumentsInvalid = "ARGUMENTS_INVALID"

// statusError maps any error a call produced to a gRPC status error: the
// registry's errors first (a store failure caused by a deadline is still
// the store's), then through pipeline.Classify.
func statusError(err error) error {
	if err == nil {
		return nil
	}
	if st := registryStatus(err); st != nil {
		return st.Err()
	}
	if st, ok := status.FromError(err); ok && !isPipelineError(err) {
		return st.Err() // already a status (gRPC's own, or an interceptor's)
	}
	return Status(pipeline.Classify(err)).Err()
}

func isPipelineError(err error) bool {
	var e *pipeline.Error
	return errors.As(err, &e)
}

// Status is a tool call's error as a gRPC status, with its details:
//   - policy refusals: an ErrorInfo with the reason (and the tool, limit
//     or rule) and, when waiting helps, a RetryInfo;
//   - invalid arguments: BadRequest field violations (field = JSON
//     Pointer), an ErrorInfo a client can switch on (metadata: the tool
//     and each repair as "kind:pointer"), and the repairs as
//     flowdrop.gateway.v1.Repair details;
//   - backend failures: the backend's (or the transport's) status with its
//     details kept, under the pipeline's code and message;
//   - idempotency outcomes (key invalid or reused, still running, result
//     not stored, store unavailable): an ErrorInfo (IDEMPOTENCY_…) and,
//     when a retry with the same key helps, a RetryInfo;
//   - fail-closed audit that cannot write: Unavailable with an ErrorInfo
//     (AUDIT_UNAVAILABLE) and, for a call refused before it ran, a RetryInfo;
//   - anything else: the code and the caller-safe message.
//
// The code and the wait come from the reason's row (pipeline.ReasonSpec),
// the table the MCP face and the audit log read too.
func Status(e *pipeline.Error) *status.Status {
	code := codes.Code(e.Spec().Code)
	reason := string(e.Reason)
	switch {
	case e.Kind == pipeline.KindPolicy:
		return policyStatus(code, e)
	case e.Kind == pipeline.KindValidation:
		return invalidArgumentsStatus(e)
	case e.Reason == pipeline.ReasonToolNameInvalid:
		return withDetails(status.New(code, e.Message), &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "tool", Description: "must match " + registry.NamePattern}}})
	case e.Reason == pipeline.ReasonToolNotFound:
		// Reached only by a caller allowed to call the name (the
		// allow-list answers first), so naming the tool reveals nothing.
		return withDetails(status.New(code, e.Message), &errdetails.ErrorInfo{
			Reason: errorInfoReason(reason), Domain: ErrorDomain, Metadata: map[string]string{"tool": policy.Bound(e.Tool)}})
	case e.Reason == pipeline.ReasonAuditUnavailable:
		// Unavailable with the wait; the sink's error (which names the
		// file) is logged, never sent.
		details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: errorInfoReason(reason), Domain: ErrorDomain}}
		if d := e.RetryWait(); d > 0 { // refused up front; a withheld result has none
			details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		}
		return withDetails(status.New(code, e.Message), details...)
	case strings.HasPrefix(reason, "idempotency-"):
		// The key's outcome: ErrorInfo (tool, and the bound when it is the
		// reason), RetryInfo when a retry with the key will help; a store
		// outage's cause (which may name Redis) is never sent.
		md := map[string]string{"tool": e.Tool}
		if e.Limit != "" {
			md["limit"] = e.Limit
		}
		details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: errorInfoReason(reason), Domain: ErrorDomain, Metadata: md}}
		if d := e.RetryWait(); d > 0 {
			details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		}
		return withDetails(status.New(code, e.Message), details...)
	case strings.HasPrefix(reason, "identity-"):
		// The identity the tool's upstream takes could not be sent: the
		// reason and the tool, never a token or the STS's answer (Cause);
		// user-consent's refusal adds where the caller authorizes.
		md := map[string]string{"tool": e.Tool}
		if e.AuthorizationURL != "" {
			md["authorization_url"] = e.AuthorizationURL
		}
		return withDetails(status.New(code, e.Message), &errdetails.ErrorInfo{Reason: errorInfoReason(reason), Domain: ErrorDomain, Metadata: md})
	case strings.HasPrefix(reason, "backend-") && e.Cause != nil:
		p := status.Convert(e.Cause).Proto()
		p.Code, p.Message = int32(code), e.Message
		return status.FromProto(p)
	}
	return status.New(code, e.Message)
}

func policyStatus(code codes.Code, e *pipeline.Error) *status.Status {
	md := map[string]string{"policy_reason": string(e.Reason)}
	if e.Tool != "" {
		md["tool"] = e.Tool
	}
	if e.Limit != "" {
		md["limit"] = e.Limit
	}
	if e.Rule != "" {
		md["rule"] = e.Rule
	}
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: errorInfoReason(string(e.Reason)), Domain: ErrorDomain, Metadata: md}}
	if d := e.RetryWait(); d > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
	}
	return withDetails(status.New(code, e.Message), details...)
}

// errorInfoReason turns "rate-limited" into "RATE_LIMITED", the form
// google.rpc.ErrorInfo.reason requires; the original is kept in metadata.
func errorInfoReason(r string) string {
	return strings.ToUpper(strings.ReplaceAll(r, "-", "_"))
}

// reasonFromErrorInfo is the gateway's own form of an ErrorInfo's reason:
// the policy_reason metadata when present, else errorInfoReason undone
// ("RATE_LIMITED" → "rate-limited").
func reasonFromErrorInfo(info *errdetails.ErrorInfo) string {
	if r := info.GetMetadata()["policy_reason"]; r != "" {
		return r
	}
	return strings.ToLower(strings.ReplaceAll(info.GetReason(), "_", "-"))
}

func invalidArgumentsStatus(e *pipeline.Error) *status.Status {
	br := &errdetails.BadRequest{}
	for _, v := range e.Violations {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
			Field:       v.Pointer,
			Description: v.Message,
		})
	}
	info := &errdetails.ErrorInfo{
		Reason:   ReasonArgumentsInvalid,
		Domain:   ErrorDomain,
		Metadata: map[string]string{"tool": e.Tool},
	}
	details := []protoadapt.MessageV1{br, info}
	for i, r := range e.Repairs {
		info.Metadata["repair_"+strconv.Itoa(i)] = r.Kind.String() + ":" + r.Path
		details = append(details, repairProto(r))
	}
	return withDetails(status.New(codes.InvalidArgument, e.Message), details...)
}

// repairProto is r as a Repair message (the kind numbered by invokewire's
// one mapping, as the raw responses carry it).
func repairProto(r normalize.Repair) *gatewayv1.Repair {
	return &gatewayv1.Repair{Path: r.Path, Kind: gatewayv1.RepairKind(invokewire.RepairKind(r.Kind)), Passes: int32(r.Passes), BoundHit: r.BoundHit}
}

func repairsProto(rs []normalize.Repair) []*gatewayv1.Repair {
	if len(rs) == 0 {
		return nil
	}
	out := make([]*gatewayv1.Repair, len(rs))
	for i, r := range rs {
		out[i] = repairProto(r)
	}
	return out
}

// ReasonRevisionMismatch is the ErrorInfo reason of an optimistic-concurrency
// failure (Aborted); metadata: tool, expected_revision, current_revision.
const ReasonRevisionMismatch = "REVISION_MISMATCH"

// registryStatus maps the errors of the registry and its admin service, or
// returns nil for any other error. It runs before the context checks: a
// store error caused by a deadline is still the store's failure.
func registryStatus(err error) *status.Status {
	var (
		te  *registry.ToolError
		rm  *registry.RevisionMismatchError
		ie  *registry.IncompatibleError
		le  *registry.LintRefusedError
		np  *registry.NoPendingChangeError
		be  *registry.BundleError
		rfe *requestFieldError
	)
	switch {
	case errors.As(err, &be):
		bounded := *be // the name may be anything a client sent
		bounded.Bundle = policy.Bound(be.Bundle)
		return withDetails(status.New(codes.InvalidArgument, bounded.Error()),
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "bundle." + be.Field, Description: be.Reason}}})
	case errors.As(err, &te):
		field := "tool." + te.Field + te.Pointer
		bounded := *te // the name may be anything a client sent
		bounded.Tool = policy.Bound(te.Tool)
		return withDetails(status.New(codes.InvalidArgument, bounded.Error()),
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: te.Reason}}})
	case errors.As(err, &rfe):
		return withDetails(status.New(codes.InvalidArgument, rfe.Error()),
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: rfe.field, Description: rfe.reason}}})
	case errors.As(err, &le):
		br := &errdetails.BadRequest{}
		for _, f := range le.Findings {
			field := "tool.input_schema" + f.Path
			if f.Path == lint.NamePath {
				field = "tool.name"
			}
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
				Field: field, Description: string(f.Profile) + " " + f.Rule + ": " + f.Message,
			})
		}
		return withDetails(status.New(codes.InvalidArgument, le.Error()), br)
	case errors.As(err, &rm):
		md := map[string]string{
			"tool":              rm.Tool,
			"expected_revision": strconv.FormatInt(rm.Expected, 10),
			"current_revision":  strconv.FormatInt(rm.Actual, 10),
		}
		if rm.Bundle != "" {
			delete(md, "tool")
			md["bundle"] = rm.Bundle
		}
		return withDetails(status.New(codes.Aborted, rm.Error()), &errdetails.ErrorInfo{
			Reason: ReasonRevisionMismatch, Domain: ErrorDomain, Metadata: md})
	case errors.As(err, &ie):
		pf := &errdetails.PreconditionFailure{}
		for _, n := range ie.Notes {
			pf.Violations = append(pf.Violations, &errdetails.PreconditionFailure_Violation{
				Type: "INCOMPATIBLE", Subject: n.Path, Description: n.Message,
			})
		}
		return withDetails(status.New(codes.FailedPrecondition, ie.Error()), pf)
	case errors.As(err, &np):
		bounded := *np
		bounded.Tool = policy.Bound(np.Tool)
		return status.New(codes.FailedPrecondition, bounded.Error())
	case errors.Is(err, registry.ErrNotFound), errors.Is(err, registry.ErrBundleNotFound):
		return status.New(codes.NotFound, err.Error())
	case errors.Is(err, registry.ErrCompacted):
		return status.New(codes.OutOfRange, err.Error())
	case errors.Is(err, registry.ErrUnavailable), errors.Is(err, registry.ErrClosed):
		// The cause names endpoints or files: it goes to the log (failed).
		return status.New(codes.Unavailable, storeUnavailable)
	}
	return nil
}

// storeUnavailable is the message of every store outage.
const storeUnavailable = "registry store unavailable; try again later"

// failed is statusError for a registry method with ctx: a failure that is
// not the caller's (a store outage, our own fault) answers without its
// cause, which may name files and endpoints, and the cause goes to the
// call's access log line (flowdrop.cause).
func failed(ctx context.Context, err error) error {
	st := statusError(err)
	switch status.Code(st) {
	case codes.Internal, codes.Unavailable, codes.Unknown, codes.DataLoss:
		addLogFields(ctx, slog.String("flowdrop.cause", err.Error()))
	}
	return st
}

// withDetails attaches details, or keeps the bare status if they cannot be
// marshalled (they always can; the status must not be lost if not).
func withDetails(st *status.Status, details ...protoadapt.MessageV1) *status.Status {
	if d, err := st.WithDetails(details...); err == nil {
		return d
	}
	return st
}
