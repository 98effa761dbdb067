package server

import "time"

// SetNormalizeHook makes f run inside the normalize stage of every call
// (e.g. to panic there) until the returned restore func is called.
func SetNormalizeHook(f func(tool string)) (restore func()) {
	testHookNormalize.Store(&f)
	return func() { testHookNormalize.Store(nil) }
}

// PoolTargets lists the backend targets s holds a connection to.
func PoolTargets(s *Server) []string { return s.pool.targets() }

// SetStoreRetry shortens how long Run waits between attempts to reach an
// unreachable registry store, until the returned restore func is called.
func SetStoreRetry(first, max time.Duration) (restore func()) {
	old := storeRetry
	storeRetry = [2]time.Duration{first, max}
	return func() { storeRetry = old }
}
