package server

import (
	"context"
	"errors"
	"time"

	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// redisSessionSubs is the namespace of the MCP face sessions' resource
// subscriptions in Redis.
const redisSessionSubs = "flowdrop:subs:"

// sessionSubscriptions keeps the MCP face sessions' subscriptions where
// every replica reads them: in Redis when configured; otherwise nil, and
// the face keeps them in its own memory (a fleet without Redis serves a
// session's subscriptions only on the replica its GET stream reaches).
func (g *Gateway) sessionSubscriptions() mcpapi.SessionSubscriptions {
	if g.redis != nil {
		return redisSessionSubscriptions{g.redis.SessionSubs(redisSessionSubs)}
	}
	return nil
}

// redisSessionSubscriptions maps the store's bound to the face's error.
type redisSessionSubscriptions struct{ *redisstate.SessionSubs }

func (r redisSessionSubscriptions) Add(ctx context.Context, session, uri string, max int, idle time.Duration) error {
	err := r.SessionSubs.Add(ctx, session, uri, max, idle)
	if errors.Is(err, redisstate.ErrSessionSubsLimit) {
		return mcpapi.ErrSessionSubscriptionLimit
	}
	return err
}
