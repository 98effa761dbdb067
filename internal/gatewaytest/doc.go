// Package gatewaytest starts a real gateway and the example tool service on
// 127.0.0.1 loopback for tests, and tears both down with t.Cleanup.
//
// It imports the composition root (server) — the one package outside cmd/ that may — with the registry and demotools; it is for tests only.
package gatewaytest
