package redisstate

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// listen subscribes to channels and, until ctx ends or the subscription
// closes, hands subscribed whether Redis has channel subscribed (each
// change: go-redis subscribes again after a lost connection; nil: not
// told) and msg each message of at most maxBytes (a longer one is not
// the gateway's and is dropped unread).
func (c *Client) listen(ctx context.Context, channels []string, maxBytes int, subscribed func(channel string, on bool), msg func(channel, payload string)) {
	ps := c.rdb.Subscribe(ctx, channels...)
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case v, ok := <-ch:
			if !ok {
				return
			}
			switch v := v.(type) {
			case *redis.Subscription:
				if subscribed != nil {
					subscribed(v.Channel, v.Kind == "subscribe")
				}
			case *redis.Message:
				if len(v.Payload) <= maxBytes {
					msg(v.Channel, v.Payload)
				}
			}
		}
	}
}
