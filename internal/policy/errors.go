package policy

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies a policy refusal. It deliberately mirrors the few gRPC
// codes the gateway needs without importing gRPC; the server maps it.
type Code uint8

const (
	// Unauthenticated: credentials are missing or invalid.
	Unauthenticated Code = iota + 1
	// PermissionDenied: the caller is known but may not do this.
	PermissionDenied
	// ResourceExhausted: a rate or concurrency limit was hit; retrying later may succeed.
	ResourceExhausted
	// InvalidArgument: the arguments break a size limit; retrying unchanged will not help.
	InvalidArgument
	// Unavailable: a check could not be made right now (its shared store
	// is unreachable) and the policy says to refuse; retrying later may succeed.
	Unavailable
)

// String returns the gRPC-style name of the code.
func (c Code) String() string {
	switch c {
	case Unauthenticated:
		return "Unauthenticated"
	case PermissionDenied:
		return "PermissionDenied"
	case ResourceExhausted:
		return "ResourceExhausted"
	case InvalidArgument:
		return "InvalidArgument"
	case Unavailable:
		return "Unavailable"
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// Stable reasons. They appear in ErrorInfo.reason and in the audit log, so
// they never change meaning once released.
const (
	ReasonCredentialsMissing   = "credentials-missing"
	ReasonCredentialsMalformed = "credentials-malformed"
	ReasonAuthMethodDisabled   = "auth-method-disabled"
	ReasonAPIKeyUnknown        = "api-key-unknown"
	ReasonJWTMalformed         = "jwt-malformed"
	ReasonJWTAlgorithm         = "jwt-algorithm"
	ReasonJWTKeyUnknown        = "jwt-key-unknown"
	ReasonJWTSignature         = "jwt-signature"
	ReasonJWTExpired           = "jwt-expired"
	ReasonJWTNotYetValid       = "jwt-not-yet-valid"
	ReasonJWTIssuer            = "jwt-issuer"
	ReasonJWTAudience          = "jwt-audience"
	ReasonJWTClaims            = "jwt-claims"
	ReasonMTLSSubject          = "mtls-subject-missing"
	ReasonRoleMissing          = "role-missing"
	ReasonMethodUnknown        = "method-unknown"
	ReasonToolNotAllowed       = "tool-not-allowed"
	ReasonToolDenied           = "tool-denied"
	ReasonRuleDenied           = "rule-denied"
	ReasonRuleError            = "rule-error"
	ReasonRateLimited          = "rate-limited"
	ReasonRateLimitUnavailable = "rate-limit-unavailable"
	ReasonLimitArgumentSize    = "limit-argument-size"
	ReasonLimitStringLength    = "limit-string-length"
	ReasonLimitDepth           = "limit-depth"
	ReasonLimitListElements    = "limit-list-elements"
	ReasonLimitObjectKeys      = "limit-object-keys"
	ReasonLimitValidationSteps = "limit-validation-steps"
	ReasonValueWithoutKind     = "value-without-kind"
	ReasonLimitInFlight        = "limit-in-flight"
)

// Error is a policy refusal. Message is safe to show to the caller and to
// log: it never contains a credential or an argument value.
type Error struct {
	Code   Code
	Reason string
	// Message is a human-readable explanation naming the tool, rule or limit.
	Message string
	// RetryAfter is set for rate limits: how long until a token is available.
	RetryAfter time.Duration
	// Limit names the limit that was hit ("max_argument_bytes", "rate", …), if any.
	Limit string
	// Tool names the tool the decision concerned, if any.
	Tool string
	// Rule names the CEL rule that denied the call, if any.
	Rule string
}

func (e *Error) Error() string { return "policy: " + e.Reason + ": " + e.Message }

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var pe *Error
	ok := errors.As(err, &pe)
	return pe, ok
}

func unauthenticated(reason, msg string) *Error {
	return &Error{Code: Unauthenticated, Reason: reason, Message: msg}
}
