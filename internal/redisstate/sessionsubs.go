package redisstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SessionSubs keeps the MCP face sessions' resource subscriptions
// (mcpapi.SessionSubscriptions) for the whole fleet: per session, a set of
// subscribed URIs and the id of the stream that last claimed the session,
// both expiring when idle; and a pub/sub channel on which a change is
// announced to the replica holding the session's stream. Keys are
// ns + "{" + session + "}:u" (the set) and ":h" (the holder), one hash
// slot per session; the channel is ns + "n". Sessions are opaque keys (the
// face's digests of its session ids).
type SessionSubs struct {
	c  *Client
	ns string
}

// SessionSubs returns the store under namespace ns (e.g. "flowdrop:subs:").
func (c *Client) SessionSubs(ns string) *SessionSubs { return &SessionSubs{c: c, ns: ns} }

// ErrSessionSubsLimit: the session's set holds its bound already.
var ErrSessionSubsLimit = errors.New("redisstate: the session's subscriptions are at their bound")

// MaxSessionKeyBytes bounds a session key, MaxSubscriptionURIBytes a URI.
const (
	MaxSessionKeyBytes      = 128
	MaxSubscriptionURIBytes = 16 << 10
)

func (s *SessionSubs) keys(session string) (set, holder string) {
	return s.ns + "{" + session + "}:u", s.ns + "{" + session + "}:h"
}

func (s *SessionSubs) check(session, uri string) error {
	if session == "" || len(session) > MaxSessionKeyBytes {
		return fmt.Errorf("redisstate: a session key of %d bytes (1..%d)", len(session), MaxSessionKeyBytes)
	}
	if len(uri) > MaxSubscriptionURIBytes {
		return fmt.Errorf("redisstate: a subscription URI of %d bytes (at most %d)", len(uri), MaxSubscriptionURIBytes)
	}
	return nil
}

// subsAddScript adds ARGV[1] to the set KEYS[1] unless it holds ARGV[2]
// members already (-1), and keeps the set and the holder KEYS[2] for
// ARGV[3] ms.
var subsAddScript = redis.NewScript(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then
  if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
  redis.call('SADD', KEYS[1], ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`)

// Add puts uri in session's set unless it holds max URIs already
// (ErrSessionSubsLimit).
func (s *SessionSubs) Add(ctx context.Context, session, uri string, max int, idle time.Duration) error {
	if err := s.check(session, uri); err != nil {
		return err
	}
	set, holder := s.keys(session)
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	n, err := subsAddScript.Run(ctx, s.c.rdb, []string{set, holder}, uri, max, idle.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n < 0 {
		return ErrSessionSubsLimit
	}
	return nil
}

// Remove takes uri out of session's set.
func (s *SessionSubs) Remove(ctx context.Context, session, uri string) error {
	if err := s.check(session, uri); err != nil {
		return err
	}
	set, _ := s.keys(session)
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	return s.c.rdb.SRem(ctx, set, uri).Err()
}

// List is session's set and its stream holder, both kept for idle more.
func (s *SessionSubs) List(ctx context.Context, session string, idle time.Duration) ([]string, string, error) {
	if err := s.check(session, ""); err != nil {
		return nil, "", err
	}
	set, holder := s.keys(session)
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	var members *redis.StringSliceCmd
	var h *redis.StringCmd
	_, err := s.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		members = p.SMembers(ctx, set)
		h = p.Get(ctx, holder)
		p.PExpire(ctx, set, idle)
		p.PExpire(ctx, holder, idle)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, "", err
	}
	who, err := h.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, "", err
	}
	return members.Val(), who, nil
}

// Claim records stream as the session's stream and announces it.
func (s *SessionSubs) Claim(ctx context.Context, session, stream string, idle time.Duration) error {
	if err := s.check(session, ""); err != nil {
		return err
	}
	_, holder := s.keys(session)
	tctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	err := s.c.rdb.Set(tctx, holder, stream, idle).Err()
	cancel()
	if err != nil {
		return err
	}
	return s.Notify(ctx, session)
}

// Notify announces a change of session to the fleet.
func (s *SessionSubs) Notify(ctx context.Context, session string) error {
	if err := s.check(session, ""); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	return s.c.rdb.Publish(ctx, s.ns+"n", session).Err()
}

// Serve calls notified with every session announced, until ctx ends
// (go-redis subscribes again after a lost connection; what was announced
// meanwhile is lost, which the face's periodic re-read covers).
func (s *SessionSubs) Serve(ctx context.Context, notified func(session string)) {
	s.c.listen(ctx, []string{s.ns + "n"}, MaxSessionKeyBytes, nil, func(_, session string) {
		if session != "" {
			notified(session)
		}
	})
}
