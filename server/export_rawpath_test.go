package server

// RawPathCounts returns how many InvokeTool calls so far were forwarded
// as received (fast), had only their arguments decoded, or were decoded
// whole. Tests compare deltas around one call.
func RawPathCounts() (fast, decodedArgs, decodedAll int64) {
	return rawStats.fast.Load(), rawStats.decodedArgs.Load(), rawStats.decodedAll.Load()
}
