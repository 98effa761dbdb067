package redisstate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ConsoleSessions is the operator console's session store of a fleet, so
// a login on one replica holds on every other. Each session is one Redis
// hash under ns + "s:" + its key (the caller passes the hash of the
// session id: a dump of Redis yields no cookie), with fields p (the
// console's payload), h (the policy hash at login), q (its login
// sequence number) and x (absolute expiry, Unix ms); its TTL is the idle
// bound, refreshed on use and never past x. A sorted set (ns + "live", by
// last use) counts the sessions: a login past the bound ends the least
// recently used, in the same script, so replicas cannot overshoot it.
// ns must carry one hash tag (e.g. "flowdrop:{console}:"): the scripts
// build a victim's key from the set's member, and every key must lie in
// the script's slot on a Cluster.
//
// A policy that leaves force on any replica is retired fleet-wide
// (Retire): ns + "retired:" + its hash holds the login sequence number
// then, and a lookup refuses a session under that policy logged in no
// later — so a reload on one replica ends the sessions of every replica
// still on the old policy, and a rollback to an earlier policy does not
// revive the sessions it ended.
type ConsoleSessions struct {
	c      *Client
	ns     string
	limits ConsoleSessionLimits
}

// ConsoleSessionLimits bound the console's sessions.
type ConsoleSessionLimits struct {
	Max      int           // live sessions, fleet-wide
	Idle     time.Duration // unused this long, a session ends
	Lifetime time.Duration // alive this long, a session ends however used
}

// ConsoleSessions returns the store under namespace ns.
func (c *Client) ConsoleSessions(ns string, l ConsoleSessionLimits) *ConsoleSessions {
	return &ConsoleSessions{c: c, ns: ns, limits: l}
}

// sessionCreateScript: KEYS session, live set, sequence; ARGV payload,
// policy hash, now ms, idle ms, expiry ms, max, key prefix, member. Idle
// members go first; at the bound, members whose key is gone (ended by
// their TTL) are dropped, then the least recently used live ones ended.
var sessionCreateScript = redis.NewScript(`
local now, idle, max = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[6])
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now - idle)
if redis.call("ZCARD", KEYS[2]) >= max then
  for _, m in ipairs(redis.call("ZRANGE", KEYS[2], 0, -1)) do
    if redis.call("EXISTS", ARGV[7] .. m) == 0 then redis.call("ZREM", KEYS[2], m) end
  end
end
while redis.call("ZCARD", KEYS[2]) >= max do
  local v = redis.call("ZPOPMIN", KEYS[2])
  redis.call("DEL", ARGV[7] .. v[1])
end
local q = redis.call("INCR", KEYS[3])
redis.call("HSET", KEYS[1], "p", ARGV[1], "h", ARGV[2], "q", q, "x", ARGV[5])
redis.call("PEXPIRE", KEYS[1], idle)
redis.call("ZADD", KEYS[2], now, ARGV[8])
return q
`)

// sessionLookupScript: KEYS session, live set, the retired mark of the
// caller's policy; ARGV policy hash, now ms, idle ms, member. The payload
// of a live session under that policy, its TTL refreshed; otherwise the
// session (if any) is ended and the answer is false.
var sessionLookupScript = redis.NewScript(`
local f = redis.call("HMGET", KEYS[1], "p", "h", "q", "x")
if not f[1] then
  redis.call("ZREM", KEYS[2], ARGV[4])
  return false
end
local now, idle = tonumber(ARGV[2]), tonumber(ARGV[3])
local x, q, retired = tonumber(f[4]), tonumber(f[3]), tonumber(redis.call("GET", KEYS[3]) or "0")
if f[2] ~= ARGV[1] or not x or not q or now >= x or q <= retired then
  redis.call("DEL", KEYS[1])
  redis.call("ZREM", KEYS[2], ARGV[4])
  return false
end
redis.call("PEXPIRE", KEYS[1], math.min(idle, x - now))
redis.call("ZADD", KEYS[2], now, ARGV[4])
return f[1]
`)

// sessionEndScript: KEYS session, live set; ARGV member.
var sessionEndScript = redis.NewScript(`
redis.call("DEL", KEYS[1])
redis.call("ZREM", KEYS[2], ARGV[1])
return 1
`)

// sessionRetireScript: KEYS the policy's retired mark, sequence; ARGV its
// TTL ms (the session lifetime: older sessions are past it anyway).
var sessionRetireScript = redis.NewScript(`
local q = tonumber(redis.call("GET", KEYS[2]) or "0")
redis.call("SET", KEYS[1], q, "PX", ARGV[1])
return q
`)

func (s *ConsoleSessions) keys(key string) (session, live string) {
	return s.ns + "s:" + key, s.ns + "live"
}

// Create stores a new session under key (the hash of its id) with the
// console's payload, logged in under policyHash at now.
func (s *ConsoleSessions) Create(ctx context.Context, key string, payload []byte, policyHash string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	ses, live := s.keys(key)
	return sessionCreateScript.Run(ctx, s.c.rdb, []string{ses, live, s.ns + "seq"},
		payload, policyHash, now.UnixMilli(), s.limits.Idle.Milliseconds(), now.Add(s.limits.Lifetime).UnixMilli(),
		s.limits.Max, s.ns+"s:", key).Err()
}

// Lookup is the payload of the live session under key, touched at now,
// when it was logged in under policyHash (the policy in force on the
// asking replica) and that policy was not retired since.
func (s *ConsoleSessions) Lookup(ctx context.Context, key, policyHash string, now time.Time) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	ses, live := s.keys(key)
	b, err := sessionLookupScript.Run(ctx, s.c.rdb, []string{ses, live, s.ns + "retired:" + policyHash},
		policyHash, now.UnixMilli(), s.limits.Idle.Milliseconds(), key).Text()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return []byte(b), true, nil
}

// End ends the session under key on every replica.
func (s *ConsoleSessions) End(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	ses, live := s.keys(key)
	return sessionEndScript.Run(ctx, s.c.rdb, []string{ses, live}, key).Err()
}

// Ping checks Redis answers (the console's login form is not offered
// while it does not).
func (s *ConsoleSessions) Ping(ctx context.Context) error { return s.c.Ping(ctx) }

// Retire ends, fleet-wide, every session logged in under policyHash so
// far: the policy left force on the calling replica.
func (s *ConsoleSessions) Retire(ctx context.Context, policyHash string) error {
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	return sessionRetireScript.Run(ctx, s.c.rdb, []string{s.ns + "retired:" + policyHash, s.ns + "seq"},
		strconv.FormatInt(s.limits.Lifetime.Milliseconds(), 10)).Err()
}
