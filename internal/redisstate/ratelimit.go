package redisstate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcra is the generic cell rate algorithm in one script, so a decision is
// atomic however many replicas ask at once. The bucket is one key holding
// its theoretical arrival time (TAT, integer microseconds on Redis's own
// clock, so replicas' clocks do not matter). A refused call leaves the TAT
// unchanged (it spends nothing). The key expires when the bucket would be
// full again, so Redis holds only buckets in use.
//
// KEYS[1] bucket; ARGV[1] microseconds per token (1e6/rate); ARGV[2] burst.
// Returns {1, 0} (allowed) or {0, microseconds until a token}.
var gcra = redis.NewScript(`
local emission = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call("GET", KEYS[1]))
if not tat or tat < now then tat = now end
local new_tat = tat + emission
local allow_at = new_tat - emission * burst
if now < allow_at then
  return {0, math.ceil(allow_at - now)}
end
redis.call("SET", KEYS[1], string.format("%.0f", new_tat), "PX", math.max(1, math.ceil((new_tat - now) / 1000)))
return {1, 0}
`)

// TakeToken takes one token from the bucket key, at rate tokens per second
// with burst; it returns 0 when the call may go on, else how long until a
// token is available. An error means Redis did not decide (unreachable,
// slow past the timeout): the caller falls back.
func (c *Client) TakeToken(ctx context.Context, key string, rate float64, burst int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := gcra.Run(ctx, c.rdb, []string{key}, strconv.FormatFloat(1e6/rate, 'f', 3, 64), burst).Int64Slice()
	if err != nil {
		return 0, err
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("redis: rate-limit script returned %d values", len(res))
	}
	if res[0] == 1 {
		return 0, nil
	}
	return time.Duration(max(res[1], 1)) * time.Microsecond, nil
}
