// Package policy holds the gateway's policy decisions — who the caller is
// (authentication), what it may call (roles, tool allow/deny lists, CEL
// argument rules), how much (token buckets, size and in-flight limits) — and
// the audit log that records each decision.
//
// The package is transport-neutral: it imports no gRPC. Every refusal is a
// *Error carrying a Code from this package and a stable Reason; the
// pipeline classifies it and each face maps it once (a gRPC status with
// ErrorInfo and, for rate limits, RetryInfo; an MCP result). Messages never
// contain a credential.
//
// The gateway's call pipeline (server/pipeline, stages.go) decides the
// order; for one InvokeTool call it is:
//
//	Authenticator.Authenticate (the face) → Authorizer.AllowMethod → (tool name) → RateLimiter.Allow
//	→ Authorizer.AllowTool, Limits.Check(args as sent) → normalize → validate
//	→ Limits.Check(normalized args), Rules.Evaluate → InFlight.Acquire → backend
//
// and every outcome is one AuditRecord.
//
// Argument rules see the normalized arguments, so an HTML-escaped payload
// is judged in the decoded form the tool will actually receive.
package policy
