package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/schema"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
)

// Code classifies an Error. The values are gRPC's code numbers, so the gRPC
// face converts one to the other by conversion; the MCP face maps them to
// its own outcomes.
type Code uint32

// The codes the pipeline and its backends produce.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

var codeNames = [...]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"}

// String is the code's gRPC name ("InvalidArgument").
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// Kind says what sort of outcome an Error is, for the audit decision and
// the metrics.
type Kind uint8

const (
	// KindFailure: the call could not be carried out (unknown tool, backend
	// failure, cancellation, our own fault).
	KindFailure Kind = iota
	// KindPolicy: a policy refusal (authentication, authorization, rules,
	// limits); Reason is a policy reason.
	KindPolicy
	// KindValidation: the normalized arguments fail the tool's schema.
	KindValidation
)

// Stable reasons of the errors the pipeline makes itself (policy refusals
// carry policy's reasons).
const (
	ReasonArgumentsInvalid     Reason = "arguments-invalid"
	ReasonArgumentsUndecodable Reason = "arguments-undecodable"
	ReasonEntityBound          Reason = "entity-bound"
	ReasonToolNotFound         Reason = "tool-not-found"
	ReasonToolNameInvalid      Reason = "tool-name-invalid"
	ReasonCallIDInvalid        Reason = "call-id-invalid"
	ReasonBackendUnavailable   Reason = "backend-unavailable"
	ReasonBackendDeadline      Reason = "backend-deadline"
	ReasonBackendCanceled      Reason = "backend-canceled"
	ReasonBackendError         Reason = "backend-error"
	// ReasonGatewaySendLimit: the request to the backend would cross the
	// gateway's backend send limit (it was never sent).
	ReasonGatewaySendLimit Reason = "gateway-send-limit"
	// ReasonBackendResponseTooLarge: the backend's response crossed the
	// gateway's receive limit for backend responses.
	ReasonBackendResponseTooLarge Reason = "backend-response-too-large"
	ReasonCanceled                Reason = "canceled"
	ReasonDeadlineExceeded        Reason = "deadline-exceeded"
	ReasonInternal                Reason = "internal"
	ReasonAuditUnavailable        Reason = "audit-unavailable"
	// ReasonCredentialUndeclared: the call's tool names a credential the
	// policy in force does not declare for it (an MCP upstream's).
	ReasonCredentialUndeclared Reason = "credential-undeclared"
	// ReasonInputUnsupported: the upstream asked the caller for input it
	// cannot give (a gRPC caller, an MCP caller before 2026-07-28, or one
	// that did not declare the capability).
	ReasonInputUnsupported Reason = "input-unsupported"
	// ReasonInputForbidden: the upstream asked for a kind of input the
	// gateway's policy forbids for it (mcp_upstreams.input.forbid).
	ReasonInputForbidden Reason = "input-forbidden"
	// ReasonInputTooLarge: the upstream's requests for input, or its
	// state, are over the gateway's bounds.
	ReasonInputTooLarge Reason = "input-too-large"
	// ReasonInputStale: a round's state is for an upstream tool the
	// gateway tool no longer calls (re-imported or changed between rounds).
	ReasonInputStale Reason = "input-stale"
	// ReasonIdentityAudience: the tool's identity mode is passthrough and
	// the caller's bearer token does not name its upstream in "aud" (or
	// the caller sent no bearer token); the call was not sent.
	ReasonIdentityAudience Reason = "identity-audience"
	// ReasonIdentityRefused: the security token service refused to
	// exchange the caller's token for the tool's upstream (token-exchange).
	ReasonIdentityRefused Reason = "identity-refused"
	// ReasonIdentityUnavailable: the identity the tool's mode sends could
	// not be made (the security token service unreachable or answering
	// nonsense, no signing key); the call was not sent.
	ReasonIdentityUnavailable Reason = "identity-unavailable"
	// ReasonIdentityConsentRequired: the tool's identity mode is
	// user-consent and the gateway holds no token of the caller's own for
	// its upstream (never authorized, lapsed or revoked): the error names
	// the URL that authorizes (Error.AuthorizationURL); the call was not sent.
	ReasonIdentityConsentRequired Reason = "identity-consent-required"
	// ReasonAliasTargetMissing: the called tool is an alias whose target is
	// no longer registered (registry.Alias).
	ReasonAliasTargetMissing Reason = "alias-target-missing"
	// ReasonAliasArgumentSet: the model sent an argument the alias sets
	// itself (a fixed or injected one).
	ReasonAliasArgumentSet Reason = "alias-argument-set"
	// ReasonAliasIdentity: the alias injects a part of the caller's
	// identity (a claim) the caller's credentials do not carry.
	ReasonAliasIdentity Reason = "alias-identity"
	// ReasonAliasArgumentsInvalid: the arguments with those the alias sets
	// fail its target's schema.
	ReasonAliasArgumentsInvalid Reason = "alias-arguments-invalid"
)

// Error is THE error of a tool call: every stage's and backend's failure
// becomes one (Classify), and each face maps it to its wire format in one
// place. Message is safe to show to the caller; Cause is not shown.
type Error struct {
	Code   Code
	Kind   Kind
	Reason Reason
	// Message explains the failure to the caller (and the model).
	Message string
	Tool    string
	// Violations are the schema violations (KindValidation).
	Violations []schema.Violation
	// Repairs are the repairs normalization made before the failure.
	Repairs []normalize.Repair
	// RetryAfter is set when waiting helps (rate limits).
	RetryAfter time.Duration
	// Limit and Rule name the limit or CEL rule that refused the call.
	Limit, Rule string
	// Required are the kinds of input (InputElicitation, …) the caller
	// must be able to answer (ReasonInputUnsupported).
	Required []string
	// AuthorizationURL is where the caller authorizes the gateway to act
	// for it at the tool's upstream (ReasonIdentityConsentRequired): a
	// link to the gateway's own start endpoint, never a token.
	AuthorizationURL string

	// Backend failures: the budget the call had and where it came from.
	Timeout        time.Duration
	DeadlineSource string

	// Cause is the underlying error: for a backend's own error, the error
	// its client returned (a face may pass its details on).
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil && e.Kind == KindFailure {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Classify turns any error a stage, a backend or the context produced into
// an *Error; nil stays nil. It is the one classifier: faces, audit and
// metrics all read its result.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var (
		e  *Error
		pe *policy.Error
		ve *schema.ValidationError
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &pe):
		return &Error{Code: policyCode(pe.Code), Kind: KindPolicy, Reason: Reason(pe.Reason), Message: pe.Message,
			Tool: pe.Tool, Limit: pe.Limit, Rule: pe.Rule, RetryAfter: pe.RetryAfter, Cause: pe}
	case errors.As(err, &ve):
		return &Error{Code: InvalidArgument, Kind: KindValidation, Reason: ReasonArgumentsInvalid, Message: ve.Error(),
			Tool: ve.Tool, Violations: ve.Violations, Repairs: ve.Repairs, Cause: ve}
	case errors.Is(err, context.Canceled):
		return &Error{Code: Canceled, Reason: ReasonCanceled, Message: "call canceled", Cause: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: DeadlineExceeded, Reason: ReasonDeadlineExceeded, Message: "deadline exceeded", Cause: err}
	}
	// Our own fault: say so without pretending it is the caller's, and keep
	// the detail (which may name internals) out of the message.
	return &Error{Code: Internal, Reason: ReasonInternal, Message: "internal error", Cause: err}
}

func policyCode(c policy.Code) Code {
	switch c {
	case policy.Unauthenticated:
		return Unauthenticated
	case policy.ResourceExhausted:
		return ResourceExhausted
	case policy.InvalidArgument:
		return InvalidArgument
	case policy.Unavailable:
		return Unavailable
	}
	return PermissionDenied
}

// IsBackendFailure reports whether e is a backend call's failure
// (unavailable, deadline, canceled, or the backend's own error).
func IsBackendFailure(e *Error) bool {
	switch e.Reason {
	case ReasonBackendUnavailable, ReasonBackendDeadline, ReasonBackendCanceled, ReasonBackendError:
		return true
	}
	return false
}

// ToolNotFound is the error for a tool the registry does not have.
func ToolNotFound(tool string) *Error {
	return &Error{Code: NotFound, Reason: ReasonToolNotFound, Tool: tool,
		Message: fmt.Sprintf("tool %q is not registered", tool)}
}

// ToolNameInvalid is the error for a name no tool can have; it quotes
// only a bounded prefix of the name.
func ToolNameInvalid(tool string) *Error {
	bounded := policy.Bound(tool)
	return &Error{Code: InvalidArgument, Reason: ReasonToolNameInvalid, Tool: bounded,
		Message: fmt.Sprintf("%q is not a tool name: must match %s", bounded, registry.NamePattern)}
}

// CallIDInvalid refuses a call id that is too long or not printable ASCII
// (its message shows a bounded prefix).
func CallIDInvalid(id string) *Error {
	return &Error{Code: InvalidArgument, Reason: ReasonCallIDInvalid,
		Message: fmt.Sprintf("call id %q is not usable: want at most %d bytes of printable ASCII, got %d bytes", policy.Bound(id), MaxCallIDBytes, len(id))}
}

// unauthenticated is the refusal of a call no face authenticated.
func unauthenticated() error {
	return &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing, Message: "call was not authenticated"}
}

// auditUnavailable refuses a call up front because fail-closed audit
// cannot write: nothing ran, so retrying later is safe (RetryAfter). No
// path, no cause for the caller.
func auditUnavailable(tool string) *Error {
	return &Error{Code: Unavailable, Reason: ReasonAuditUnavailable, Tool: tool, RetryAfter: time.Second,
		Message: "audit log unavailable: the gateway records every call and cannot right now; try again later"}
}

// auditWithheld replaces the answer of a call that ran but whose audit line
// could not be written. No RetryAfter: the tool has run, so a blind retry
// would run it again.
func auditWithheld(tool string) *Error {
	return &Error{Code: Unavailable, Reason: ReasonAuditUnavailable, Tool: tool,
		Message: "audit log unavailable: the call's result is withheld because it could not be recorded; the tool may have run"}
}
