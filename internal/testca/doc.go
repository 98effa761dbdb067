// Package testca issues throwaway certificates for tests (mTLS to the
// gateway, TLS to etcd): generated at test time, so no key is committed.
//
// It imports the standard library only; it is for tests only.
package testca
