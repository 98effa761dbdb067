// Package identity is who an upstream learns is calling: per tool or per
// upstream, the policy (upstream_identity) chooses one mode, never the
// caller —
//
//   - static: the tool's own credential as today (a credential source), and
//     the caller's subject in an unsigned header;
//   - passthrough: the caller's own bearer token, only when its "aud" names
//     the upstream (RFC 8707 resource indicators);
//   - gateway-signed: a JWT the gateway mints per call (sub, aud, roles,
//     call id, iat/exp), signed with a key from a file and verifiable by
//     any backend against the JWKS the admin listener serves;
//   - token-exchange: an RFC 8693 exchange of the caller's token at a
//     security token service, cached per (subject, audience).
//
// Resolver.Resolve is the one switch over the modes; a mode it does not
// know fails the call closed. Every failure is a *pipeline.Error naming
// the tool, never a token, a key's path or the STS's answer (those are in
// the Cause, for the log), and the call is not sent.
package identity
