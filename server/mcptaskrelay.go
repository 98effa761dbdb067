package server

// redisTaskRelay is the namespace of the channels that carry a stdio or
// legacy SSE upstream's task requests to the replica holding the task's
// connection.
const redisTaskRelay = "flowdrop:taskrelay:"

// relayTasks makes such tasks reachable from every replica of a fleet
// over Redis (mcptasks.Relay); on one node every task is this process's.
func (g *Gateway) relayTasks() {
	if g.redis != nil {
		g.kinds.MCPUpstream.SetTaskRelay(g.redis.TaskRelay(redisTaskRelay))
	}
}
