package server

import (
	"github.com/flowdrop/gateway/internal/mcptasks"
)

// redisTasks is the MCP task records' namespace in Redis.
const redisTasks = "flowdrop:{task}:"

// taskStore is where the MCP face keeps who owns which upstream task:
// Redis when configured, so every replica answers for every task; else
// this process's memory (one node: a restart forgets the tasks, which the
// upstream still runs until they expire there).
func (g *Gateway) taskStore() mcptasks.Store {
	if g.redis != nil {
		return g.redis.Tasks(redisTasks)
	}
	return mcptasks.NewMemory(0)
}
