package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// This file is THE one place pipeline (domain) errors become gRPC statuses.
// The stages return the domain errors below; grpcError maps them. A later
// MCP adapter maps the same domain errors to its own error shapes.

// ErrorDomain is the google.rpc.ErrorInfo domain of errors the gateway makes.
const ErrorDomain = "flowdrop.dev"

// ReasonArgumentsInvalid is the ErrorInfo reason for arguments that fail the
// tool's schema after normalization.
const ReasonArgumentsInvalid = "ARGUMENTS_INVALID"

// toolNotFoundError: the call names a tool the registry does not have.
type toolNotFoundError struct{ tool string }

func (e *toolNotFoundError) Error() string { return fmt.Sprintf("tool %q is not registered", e.tool) }

// deadlineSource says where a backend call's deadline came from, for the
// DeadlineExceeded message.
type deadlineSource uint8

const (
	deadlineCaller deadlineSource = iota + 1
	deadlineTool
	deadlineDefault
)

func (d deadlineSource) String() string {
	switch d {
	case deadlineCaller:
		return "the caller's deadline"
	case deadlineTool:
		return "the tool's timeout"
	case deadlineDefault:
		return "the gateway's default timeout"
	}
	return "deadline"
}

// backendError: the backend call failed. err is what the gRPC client returned.
type backendError struct {
	tool, target string
	timeout      time.Duration // the budget the call had
	source       deadlineSource
	err          error
}

func (e *backendError) Error() string {
	return fmt.Sprintf("tool %q: backend %s: %v", e.tool, e.target, e.err)
}

func (e *backendError) Unwrap() error { return e.err }

// grpcError maps a pipeline error to a gRPC status error.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if st := registryStatus(err); st != nil {
		return st.Err()
	}
	var (
		nf *toolNotFoundError
		ia *registry.ValidationError
		be *backendError
		pe *policy.Error
	)
	switch {
	case errors.As(err, &pe):
		return policyErrorToStatus(pe).Err()
	case errors.As(err, &nf):
		return status.Error(codes.NotFound, nf.Error())
	case errors.As(err, &ia):
		return invalidArgumentsStatus(ia).Err()
	case errors.As(err, &be):
		return backendStatus(be).Err()
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "call canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	// Our own bug: say so without pretending it is the caller's fault.
	return status.Error(codes.Internal, "internal error: "+err.Error())
}

// invalidArgumentsStatus is InvalidArgument whose message is the
// model-readable explanation, with google.rpc.BadRequest field violations
// (field = JSON Pointer), an ErrorInfo a client can switch on (metadata:
// the tool and each repair as "kind:pointer"), and the repairs themselves as
// flowdrop.gateway.v1.Repair details.
// The repairs are those normalization made before validation (e.Repairs).
func invalidArgumentsStatus(e *registry.ValidationError) *status.Status {
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
	st := status.New(codes.InvalidArgument, e.Error())
	if withDetails, err := st.WithDetails(details...); err == nil {
		return withDetails
	}
	return st
}

// backendStatus maps a failed backend call honestly: unreachable →
// Unavailable naming the tool, deadline → DeadlineExceeded naming the tool
// and the budget, cancellation → Canceled, anything else is the backend's
// own status (code, message, details) unchanged.
func backendStatus(e *backendError) *status.Status {
	st := status.Convert(e.err)
	var code codes.Code
	var msg string
	switch {
	case errors.Is(e.err, context.Canceled) || st.Code() == codes.Canceled:
		code, msg = codes.Canceled, fmt.Sprintf("tool %q: call canceled", e.tool)
	case errors.Is(e.err, context.DeadlineExceeded) || st.Code() == codes.DeadlineExceeded:
		code = codes.DeadlineExceeded
		msg = fmt.Sprintf("tool %q: backend %s did not answer within %v (%v)", e.tool, e.target, e.timeout.Round(time.Millisecond), e.source)
	case st.Code() == codes.Unavailable:
		code, msg = codes.Unavailable, fmt.Sprintf("tool %q: backend %s unavailable: %s", e.tool, e.target, st.Message())
	default:
		return st
	}
	// Keep whatever details the backend or the transport attached.
	p := st.Proto()
	p.Code, p.Message = int32(code), msg
	return status.FromProto(p)
}

func repairProto(r normalize.Repair) *gatewayv1.Repair {
	kind := gatewayv1.RepairKind_REPAIR_KIND_UNSPECIFIED
	switch r.Kind {
	case normalize.JSONDecoded:
		kind = gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED
	case normalize.EntitiesDecoded:
		kind = gatewayv1.RepairKind_REPAIR_KIND_ENTITIES_DECODED
	}
	return &gatewayv1.Repair{Path: r.Path, Kind: kind, Passes: int32(r.Passes), BoundHit: r.BoundHit}
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
		rfe *requestFieldError
	)
	switch {
	case errors.As(err, &te):
		field := "tool." + te.Field + te.Pointer
		return withDetails(status.New(codes.InvalidArgument, te.Error()),
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
		return withDetails(status.New(codes.Aborted, rm.Error()), &errdetails.ErrorInfo{
			Reason: ReasonRevisionMismatch, Domain: ErrorDomain,
			Metadata: map[string]string{
				"tool":              rm.Tool,
				"expected_revision": strconv.FormatInt(rm.Expected, 10),
				"current_revision":  strconv.FormatInt(rm.Actual, 10),
			},
		})
	case errors.As(err, &ie):
		pf := &errdetails.PreconditionFailure{}
		for _, n := range ie.Notes {
			pf.Violations = append(pf.Violations, &errdetails.PreconditionFailure_Violation{
				Type: "INCOMPATIBLE", Subject: n.Path, Description: n.Message,
			})
		}
		return withDetails(status.New(codes.FailedPrecondition, ie.Error()), pf)
	case errors.Is(err, registry.ErrNotFound):
		return status.New(codes.NotFound, err.Error())
	case errors.Is(err, registry.ErrCompacted):
		return status.New(codes.OutOfRange, err.Error())
	case errors.Is(err, registry.ErrUnavailable):
		return status.New(codes.Unavailable, "registry store unavailable: "+err.Error())
	case errors.Is(err, registry.ErrClosed):
		return status.New(codes.Unavailable, "registry store unavailable: "+err.Error())
	}
	return nil
}

// withDetails attaches details, or keeps the bare status if they cannot be
// marshalled (they always can; the status must not be lost if not).
func withDetails(st *status.Status, details ...protoadapt.MessageV1) *status.Status {
	if d, err := st.WithDetails(details...); err == nil {
		return d
	}
	return st
}
