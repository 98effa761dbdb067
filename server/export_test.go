package server

// SetNormalizeHook makes f run inside the normalize stage of every call
// (e.g. to panic there) until the returned restore func is called.
func SetNormalizeHook(f func(tool string)) (restore func()) {
	testHookNormalize.Store(&f)
	return func() { testHookNormalize.Store(nil) }
}

// PoolTargets lists the backend targets s holds a connection to.
func PoolTargets(s *Server) []string { return s.pool.targets() }
