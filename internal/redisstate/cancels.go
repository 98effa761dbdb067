package redisstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Cancels carries a caller's cancellation of a call between the replicas
// of a fleet over Redis pub/sub, for calls the replica a cancellation
// reaches cannot end itself (MCP's notifications/cancelled before
// 2026-07-28 arrives in a POST of its own, which a load balancer may send
// to any replica). Calls are named by an opaque key (the MCP face's:
// caller and request id). A key is cancelled only when exactly one call in
// the whole fleet holds it, so the replica asks every other one how many
// it holds first:
//
//  1. the asking replica publishes a query on the fleet channel (ns + "q");
//     PUBLISH answers how many replicas are subscribed, so it knows how
//     many replies to wait for;
//  2. each other replica replies on the asker's own channel (ns + "r:" +
//     its id) with how many calls it holds under the key;
//  3. when the fleet holds exactly one, the asker cancels its own or
//     publishes a cancel addressed to the one replica that holds it.
//
// A replica that does not reply in time makes the answer unknown (an
// error): the caller decides alone then. Nothing is stored in Redis.
type Cancels struct {
	c    *Client
	ns   string
	self string

	mu      sync.Mutex
	waiting map[string]chan cancelMsg // nonce → replies
	serving bool
}

// Cancels returns the fleet's cancellation channels under namespace ns
// (e.g. "flowdrop:cancel:"), with a random id for this replica.
func (c *Client) Cancels(ns string) *Cancels {
	return &Cancels{c: c, ns: ns, self: randomHex(12), waiting: map[string]chan cancelMsg{}}
}

// MaxCancelKeyBytes bounds a key carried (the face's keys are its caller's
// subject and a request id, each bounded); a longer one is refused.
const MaxCancelKeyBytes = 1024

// maxCancelMsgBytes bounds a message read from the channels (a key, its
// envelope): anything longer is not the gateway's and is dropped.
const maxCancelMsgBytes = MaxCancelKeyBytes + 512

// maxFleet bounds the other replicas a lookup waits for (the replies it
// buffers); a larger fleet gets ErrCancelUnknown.
const maxFleet = 256

// cancelMsg is one message on the channels.
type cancelMsg struct {
	Op    string `json:"o"` // "q" query, "r" reply, "c" cancel
	Nonce string `json:"n"`
	From  string `json:"f"`
	To    string `json:"t,omitempty"` // "c": the replica that holds the call
	Key   string `json:"k,omitempty"`
	Count int    `json:"c,omitempty"` // "r": calls held under the key
}

// ErrCancelUnknown: the fleet's holdings could not be learned (Redis
// unreachable, or a replica did not reply in time).
var ErrCancelUnknown = errors.New("redisstate: the other replicas' calls are not known")

// Serve answers the other replicas until ctx ends: held is how many calls
// this replica holds under a key, cancel ends the one call under it. It
// subscribes to the fleet's channel and this replica's own (Redis may come
// up later: go-redis resubscribes).
func (s *Cancels) Serve(ctx context.Context, held func(key string) int, cancel func(key string) bool) {
	defer s.setServing(false)
	subscribed := func(channel string, on bool) {
		// Lookups count this replica among PUBLISH's subscribers, so they
		// wait until Redis says it is one.
		if channel == s.ns+"q" {
			s.setServing(on)
		}
	}
	s.c.listen(ctx, []string{s.ns + "q", s.ns + "r:" + s.self}, maxCancelMsgBytes, subscribed, func(_, payload string) {
		var msg cancelMsg
		if json.Unmarshal([]byte(payload), &msg) != nil || msg.From == s.self || msg.Key == "" && msg.Op != "r" {
			return
		}
		switch msg.Op {
		case "q":
			// Replied from its own goroutine: a slow Redis must not hold up
			// the replies other askers wait for.
			go s.publish(context.WithoutCancel(ctx), s.ns+"r:"+msg.From,
				cancelMsg{Op: "r", Nonce: msg.Nonce, From: s.self, Count: held(msg.Key)})
		case "r":
			s.mu.Lock()
			w := s.waiting[msg.Nonce]
			s.mu.Unlock()
			if w != nil {
				select {
				case w <- msg:
				default: // more replies than replicas: not ours
				}
			}
		case "c":
			if msg.To == s.self {
				cancel(msg.Key)
			}
		}
	})
}

func (s *Cancels) setServing(on bool) {
	s.mu.Lock()
	s.serving = on
	s.mu.Unlock()
}

// Cancel ends the one call in the fleet under key, local being how many
// this replica holds: it reports here when that call is this replica's
// (the caller ends it), and cancelled when it was another's and that
// replica was told to end it. With no call, or more than one, under key
// in the fleet it does neither. It waits at most wait for the replies;
// ErrCancelUnknown when they did not all come.
func (s *Cancels) Cancel(ctx context.Context, key string, local int, wait time.Duration) (here, cancelled bool, err error) {
	if len(key) == 0 || len(key) > MaxCancelKeyBytes {
		return false, false, fmt.Errorf("redisstate: a cancellation key of %d bytes (1..%d)", len(key), MaxCancelKeyBytes)
	}
	ctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	nonce := randomHex(12)
	replies := make(chan cancelMsg, maxFleet)
	s.mu.Lock()
	serving := s.serving
	s.waiting[nonce] = replies
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, nonce)
		s.mu.Unlock()
	}()
	if !serving {
		// Replies come through Serve's subscription.
		return false, false, fmt.Errorf("%w: not subscribed", ErrCancelUnknown)
	}
	subscribers, err := s.publishCount(ctx, s.ns+"q", cancelMsg{Op: "q", Nonce: nonce, From: s.self, Key: key})
	if err != nil {
		return false, false, fmt.Errorf("%w: %v", ErrCancelUnknown, err)
	}
	others := int(subscribers) - 1 // this replica is subscribed too
	if others > cap(replies) {
		return false, false, fmt.Errorf("%w: %d replicas subscribed, at most %d asked", ErrCancelUnknown, subscribers, cap(replies))
	}
	total, holder := local, ""
	for got := range max(others, 0) {
		select {
		case r := <-replies:
			if r.Count > 0 {
				total += r.Count
				holder = r.From
			}
		case <-ctx.Done():
			return false, false, fmt.Errorf("%w: %d of %d replicas replied", ErrCancelUnknown, got, others)
		}
	}
	switch {
	case total != 1:
		return false, false, nil
	case local == 1:
		return true, false, nil
	}
	if err := s.publish(ctx, s.ns+"q", cancelMsg{Op: "c", Nonce: nonce, From: s.self, To: holder, Key: key}); err != nil {
		return false, false, fmt.Errorf("%w: %v", ErrCancelUnknown, err)
	}
	return false, true, nil
}

func (s *Cancels) publish(ctx context.Context, channel string, m cancelMsg) error {
	_, err := s.publishCount(ctx, channel, m)
	return err
}

func (s *Cancels) publishCount(ctx context.Context, channel string, m cancelMsg) (int64, error) {
	return s.c.publishJSON(ctx, channel, m)
}

// publishJSON publishes m as JSON on channel within the client's command
// timeout and returns how many subscribers received it.
func (c *Client) publishJSON(ctx context.Context, channel string, m any) (int64, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.rdb.Publish(ctx, channel, b).Result()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
