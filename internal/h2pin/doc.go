// Package h2pin is an adversarial gRPC client for tests and measurements:
// over one plaintext HTTP/2 connection it opens streams whose request
// message is announced but never finished, sends as many of its bytes as
// the server's flow-control windows allow, and holds them. It is how the
// gateway's pre-authentication bounds are measured (RELIABILITY.md): a
// server that reads such a message for a caller it has not authenticated
// holds the bytes for as long as the client waits.
package h2pin
