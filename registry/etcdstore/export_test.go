package etcdstore

// SetPageFetched replaces the hook called after each page a paged read
// fetched; the returned func restores it.
func SetPageFetched(f func()) (restore func()) {
	old := pageFetched
	pageFetched = f
	return func() { pageFetched = old }
}
