// Package policyreload holds the policy in force and makes reloads of it
// one at a time (Reloader): each candidate is checked, built and swapped
// in by the caller's apply under one lock, or refused — logged at ERROR,
// counted, the policy in force unchanged — and an object a reload
// replaced (an authenticator with its JWKS refresh) is closed only after
// a grace, since a call that took the old policy may still use it. The
// composition root (package server) knows what a policy is; this package
// only how it changes:
//
//	r := policyreload.New(policyreload.Config[server.PolicyConfig]{Policy: cfg, Hash: hash, Metrics: m, Log: log})
//	err := r.Reload(next, func(cur, next *server.PolicyConfig) (policyreload.Applied, error) { ... })
//	defer r.CloseRetired()
package policyreload
