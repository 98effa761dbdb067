// Package policy holds the gateway's policy decisions — who the caller is
// (authentication), what it may call (roles, tool allow/deny lists, CEL
// argument rules), how much (token buckets, size and in-flight limits) — and
// the audit log that records each decision.
//
// The package is transport-neutral: it imports no gRPC. Every refusal is a
// *Error carrying a Code from this package and a stable Reason; the server's
// one error mapper turns it into a gRPC status (with ErrorInfo and, for rate
// limits, RetryInfo details). Messages never contain a credential.
//
// Order of checks for one InvokeTool call (the server wires it):
//
//	Authenticate → Authorizer.AllowMethod → RateLimiter.Allow → Limits.Check(raw args)
//	→ normalize → Limits.Check(normalized args) → validate → Authorizer.AllowTool
//	→ Rules.Evaluate(normalized args) → InFlight.Acquire → forward → audit
//
// Argument rules see the normalized arguments, so an HTML-escaped payload
// is judged in the decoded form the tool will actually receive.
package policy
