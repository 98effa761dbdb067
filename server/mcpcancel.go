package server

import "github.com/flowdrop/gateway/server/mcpapi"

// redisCancels is the namespace of the MCP face's cancellation channels
// in Redis.
const redisCancels = "flowdrop:cancel:"

// cancelFleet carries an older MCP caller's notifications/cancelled to
// the replica running its call: over Redis when configured; none on one
// node, where the call is always this replica's.
func (g *Gateway) cancelFleet() mcpapi.CancelFleet {
	if g.redis != nil {
		return g.redis.Cancels(redisCancels)
	}
	return nil
}

// redisInput is the namespace of the MCP face's channels for callers'
// answers to relayed requests for input.
const redisInput = "flowdrop:input:"

// inputFleet carries an older MCP caller's answer to a relayed request
// for input to the replica whose call awaits it: over Redis when
// configured; none on one node.
func (g *Gateway) inputFleet() mcpapi.InputFleet {
	if g.redis != nil {
		return g.redis.Answers(redisInput)
	}
	return nil
}
