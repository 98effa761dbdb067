// Package archtest holds the architecture test: which packages may import
// what, read from `go list`. It has no code of its own.
package archtest
