package pipeline

import (
	"maps"
	"slices"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

// Reason is the stable reason of a tool call's Error: the pipeline's own,
// the backends' (ReasonBackend…, ReasonCredentialUndeclared) and policy's
// (policy.Reason…, untyped constants that convert here). It appears in
// ErrorInfo, in MCP results' _meta and in the audit log, so a reason never
// changes meaning once released. Every reason has exactly one row in
// reasons; TestReasonsExhaustive fails for a Reason… constant without one.
type Reason string

// MCPOutcome is what the MCP face answers for a reason. MCP separates a
// tool execution error (a result with isError, which the model reads and
// can act on) from a protocol error (a JSON-RPC error, for the client).
type MCPOutcome uint8

const (
	// MCPInternalError: JSON-RPC internal error "internal error"; the error
	// is logged, never sent. The zero value, so a reason without a row
	// fails closed.
	MCPInternalError MCPOutcome = iota
	// MCPToolError: an isError result carrying the message and the reason;
	// the model can change the arguments, wait, or try another way.
	MCPToolError
	// MCPInvalidParams: JSON-RPC invalid params; the call could never have
	// been made as sent (no such tool, a name or id no call can have).
	MCPInvalidParams
	// MCPPermissionDenied: JSON-RPC MCPCodePermissionDenied (not
	// authenticated, or no right to call tools at all).
	MCPPermissionDenied
	// MCPCanceled and MCPDeadline: the request's own context error.
	MCPCanceled
	MCPDeadline
	// MCPMissingCapability: JSON-RPC -32021 (MCP 2026-07-28, SEP-2575)
	// naming the client capabilities the call needs (Error.Required).
	MCPMissingCapability
	// MCPURLElicitation: JSON-RPC -32042 (URLElicitationRequiredError,
	// MCP 2025-11-25) carrying Error.AuthorizationURL as a URL-mode
	// elicitation, to a caller that declared it can open URLs; an isError
	// result naming the URL to any other.
	MCPURLElicitation
)

// RetryHint says whether sending the same call again can succeed.
type RetryHint uint8

const (
	// RetryNo: the same call fails again; the arguments, the credentials,
	// the policy or the tool must change.
	RetryNo RetryHint = iota
	// RetryLater: a later retry may succeed; Error.RetryAfter says when,
	// if known. Only these reasons carry RetryAfter (gRPC RetryInfo, the
	// MCP message's "retry after").
	RetryLater
	// RetryUnknown: it depends on what happened (cancellation, a deadline
	// or the backend's own error, after which the tool may have run).
	RetryUnknown
)

// ReasonSpec is a reason's row: how every face and the audit log treat it.
type ReasonSpec struct {
	// Code is the gRPC code the gRPC face answers. CodeOfError (for the
	// backend's own error) passes the Error's Code on.
	Code Code
	MCP  MCPOutcome
	// Decision is the audit decision: policy.DecisionDeny (a refusal: the
	// policy or the schema said no) or policy.DecisionError (the call
	// could not be carried out).
	Decision string
	Retry    RetryHint
}

// CodeOfError in a ReasonSpec: the code is the Error's own (a backend's).
const CodeOfError Code = 1<<32 - 1

// reasons is THE table of reasons. Faces read it through Spec.
var reasons = map[Reason]ReasonSpec{
	// The pipeline's own.
	ReasonArgumentsInvalid:     {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	ReasonArgumentsUndecodable: {InvalidArgument, MCPInvalidParams, policy.DecisionError, RetryNo},
	ReasonEntityBound:          {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	ReasonToolNotFound:         {NotFound, MCPInvalidParams, policy.DecisionError, RetryNo},
	ReasonToolNameInvalid:      {InvalidArgument, MCPInvalidParams, policy.DecisionError, RetryNo},
	// A call id comes from the client (metadata, _meta), not the model.
	ReasonCallIDInvalid:    {InvalidArgument, MCPInvalidParams, policy.DecisionError, RetryNo},
	ReasonCanceled:         {Canceled, MCPCanceled, policy.DecisionError, RetryUnknown},
	ReasonDeadlineExceeded: {DeadlineExceeded, MCPDeadline, policy.DecisionError, RetryUnknown},
	ReasonInternal:         {Internal, MCPInternalError, policy.DecisionError, RetryUnknown},
	// Refused up front (RetryAfter) or the result withheld after the tool
	// ran (none: a blind retry would run it again).
	ReasonAuditUnavailable: {Unavailable, MCPToolError, policy.DecisionError, RetryLater},

	// Idempotency keys: a new key, or a retry with this one, is the model's
	// to choose.
	ReasonIdempotencyKeyInvalid:      {InvalidArgument, MCPToolError, policy.DecisionError, RetryNo},
	ReasonIdempotencyKeyReused:       {InvalidArgument, MCPToolError, policy.DecisionError, RetryNo},
	ReasonIdempotencyInProgress:      {Aborted, MCPToolError, policy.DecisionError, RetryLater},
	ReasonIdempotencyResultNotStored: {FailedPrecondition, MCPToolError, policy.DecisionError, RetryNo},
	ReasonIdempotencyUnavailable:     {Unavailable, MCPToolError, policy.DecisionError, RetryLater},

	// Backends. The MCP spec counts API failures as tool execution errors.
	ReasonBackendUnavailable:      {Unavailable, MCPToolError, policy.DecisionError, RetryLater},
	ReasonBackendDeadline:         {DeadlineExceeded, MCPToolError, policy.DecisionError, RetryUnknown},
	ReasonBackendCanceled:         {Canceled, MCPCanceled, policy.DecisionError, RetryUnknown},
	ReasonBackendError:            {CodeOfError, MCPToolError, policy.DecisionError, RetryUnknown},
	ReasonGatewaySendLimit:        {ResourceExhausted, MCPToolError, policy.DecisionError, RetryNo},
	ReasonBackendResponseTooLarge: {ResourceExhausted, MCPToolError, policy.DecisionError, RetryNo},
	// An operator or an admin must act; the model can try another way.
	ReasonCredentialUndeclared: {FailedPrecondition, MCPToolError, policy.DecisionError, RetryNo},
	// An upstream's request for input (input.go). A caller without the
	// capability is told so as a protocol error (MCP 2026-07-28's
	// missing-capability error); the policy's refusal and the bounds are
	// the model's to work around.
	ReasonInputUnsupported:    {FailedPrecondition, MCPMissingCapability, policy.DecisionError, RetryNo},
	ReasonInputForbidden:      {PermissionDenied, MCPToolError, policy.DecisionDeny, RetryNo},
	ReasonInputTooLarge:       {ResourceExhausted, MCPToolError, policy.DecisionError, RetryNo},
	ReasonInputStale:          {FailedPrecondition, MCPToolError, policy.DecisionError, RetryNo},
	ReasonIdentityAudience:    {PermissionDenied, MCPToolError, policy.DecisionDeny, RetryNo},
	ReasonIdentityRefused:     {PermissionDenied, MCPToolError, policy.DecisionDeny, RetryNo},
	ReasonIdentityUnavailable: {Unavailable, MCPToolError, policy.DecisionError, RetryLater},
	// The caller (a person behind it) must authorize at the URL, then the
	// same call succeeds; MCP callers that can open URLs get the protocol's
	// URL elicitation (mcpapi/result.go).
	ReasonIdentityConsentRequired: {FailedPrecondition, MCPURLElicitation, policy.DecisionDeny, RetryNo},
	// Aliases: an admin must re-point one whose target is gone; the rest
	// are the model's (or its caller's credentials') to change.
	ReasonAliasTargetMissing:    {FailedPrecondition, MCPToolError, policy.DecisionError, RetryNo},
	ReasonAliasArgumentSet:      {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	ReasonAliasIdentity:         {PermissionDenied, MCPToolError, policy.DecisionDeny, RetryNo},
	ReasonAliasArgumentsInvalid: {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},

	// Policy: authentication. MCP answers these as a protocol error.
	policy.ReasonCredentialsMissing:   {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonCredentialsMalformed: {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonAuthMethodDisabled:   {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonAPIKeyUnknown:        {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTMalformed:         {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTAlgorithm:         {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTKeyUnknown:        {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTSignature:         {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTExpired:           {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTNotYetValid:       {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTIssuer:            {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTAudience:          {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonJWTClaims:            {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonMTLSSubject:          {Unauthenticated, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	// Authorization: no role for the method is a protocol error; a tool
	// outside this caller's lists is invalid params, like an unknown tool
	// (it is not in the caller's tools/list).
	policy.ReasonRoleMissing:    {PermissionDenied, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonMethodUnknown:  {PermissionDenied, MCPPermissionDenied, policy.DecisionDeny, RetryNo},
	policy.ReasonToolNotAllowed: {PermissionDenied, MCPInvalidParams, policy.DecisionDeny, RetryNo},
	policy.ReasonToolDenied:     {PermissionDenied, MCPInvalidParams, policy.DecisionDeny, RetryNo},
	// Argument rules and limits: the model can change the arguments or wait.
	policy.ReasonRuleDenied:           {PermissionDenied, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonRuleError:            {PermissionDenied, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonRateLimited:          {ResourceExhausted, MCPToolError, policy.DecisionDeny, RetryLater},
	policy.ReasonRateLimitUnavailable: {Unavailable, MCPToolError, policy.DecisionDeny, RetryLater},
	policy.ReasonLimitInFlight:        {ResourceExhausted, MCPToolError, policy.DecisionDeny, RetryLater},
	policy.ReasonLimitArgumentSize:    {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonLimitStringLength:    {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonLimitDepth:           {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonLimitListElements:    {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonLimitObjectKeys:      {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonLimitValidationSteps: {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
	policy.ReasonValueWithoutKind:     {InvalidArgument, MCPToolError, policy.DecisionDeny, RetryNo},
}

// Reasons is every reason with a row, sorted: what tests and docs enumerate.
func Reasons() []Reason { return slices.Sorted(maps.Keys(reasons)) }

// SpecOf is r's row, and whether it has one.
func SpecOf(r Reason) (ReasonSpec, bool) {
	s, ok := reasons[r]
	return s, ok
}

// Spec is e's row: the table's, with CodeOfError resolved to e.Code. An
// Error whose reason has no row (none should: TestReasonsExhaustive) keeps
// its own code and is judged by its Kind: a refusal is denied and an isError
// result on MCP, a failure an error and an internal error on MCP.
func (e *Error) Spec() ReasonSpec {
	s, ok := reasons[e.Reason]
	if !ok {
		s = ReasonSpec{Code: e.Code, MCP: MCPInternalError, Decision: policy.DecisionError, Retry: RetryUnknown}
		if e.Kind != KindFailure {
			s.MCP, s.Decision = MCPToolError, policy.DecisionDeny
		}
	}
	if s.Code == CodeOfError {
		s.Code = e.Code
	}
	return s
}

// RetryWait is e.RetryAfter when its reason is one a later retry may help
// (RetryLater), else 0: the wait a face passes on (gRPC RetryInfo, the MCP
// message's "retry after").
func (e *Error) RetryWait() time.Duration {
	if e.RetryAfter > 0 && e.Spec().Retry == RetryLater {
		return e.RetryAfter
	}
	return 0
}

// AuditValidationFailed is the audit reason of a call whose arguments
// failed the tool's schema (its Error's reason is ReasonArgumentsInvalid).
const AuditValidationFailed = "validation-failed"

// AuditOutcome is e's audit decision and reason, as its audit line gives
// them: the decision is the reason's row's; an error line names the gRPC
// code instead of the reason, and a schema refusal is "validation-failed".
// Policy replay (server/replay) compares recorded lines by it.
func (e *Error) AuditOutcome() (decision, reason string) {
	decision, reason = e.Spec().Decision, string(e.Reason)
	if decision == policy.DecisionError {
		reason = e.Code.String()
	}
	if e.Kind == KindValidation {
		reason = AuditValidationFailed
	}
	return decision, reason
}
