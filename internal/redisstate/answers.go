package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Answers carries a caller's answer to a request the gateway relayed to
// it (MCP elicitation or sampling before 2026-07-28) to the replica whose
// call awaits it, over Redis pub/sub: the caller posts its answer to
// whichever replica a load balancer picks, and the request's id names the
// replica that asked (Self). The replica the answer reaches publishes it
// on that replica's own channel (ns + "a:" + its name) and waits for its
// reply (on ns + "r:" + its own name) saying whether a call took it.
// Nothing is stored in Redis: with Redis down the answer is not delivered
// (ErrAnswerUndelivered) and the call waits out its bound; with the
// asking replica gone, no call awaits it.
type Answers struct {
	c    *Client
	ns   string
	self string

	mu      sync.Mutex
	waiting map[string]chan bool // nonce → the holder's reply
}

// Answers returns the fleet's answer channels under namespace ns (e.g.
// "flowdrop:input:"), with a random name for this replica.
func (c *Client) Answers(ns string) *Answers {
	return &Answers{c: c, ns: ns, self: randomHex(12), waiting: map[string]chan bool{}}
}

// MaxAnswerBytes bounds an answer carried (the MCP face bounds a caller's
// answer to 1 MiB); a larger one is refused, and dropped when read.
const MaxAnswerBytes = 1<<20 + 8192

// ErrAnswerUndelivered: the replica an answer is for could not be asked
// (Redis unreachable, or no reply in time).
var ErrAnswerUndelivered = errors.New("redisstate: the answer could not be handed to the replica awaiting it")

type answerMsg struct {
	Op     string          `json:"o"` // "a" answer, "r" reply
	Nonce  string          `json:"n"`
	From   string          `json:"f"`
	Key    string          `json:"k,omitempty"`
	Answer json.RawMessage `json:"a,omitempty"`
	OK     bool            `json:"ok,omitempty"`
}

// Self is this replica's name, which the ids of its relayed requests carry.
func (a *Answers) Self() string { return a.self }

// Serve hands the answers addressed to this replica to deliver (reporting
// whether a call took it) until ctx ends.
func (a *Answers) Serve(ctx context.Context, deliver func(key string, answer []byte) bool) {
	a.c.listen(ctx, []string{a.ns + "a:" + a.self, a.ns + "r:" + a.self}, MaxAnswerBytes+MaxCancelKeyBytes+512, nil, func(_, payload string) {
		var msg answerMsg
		if json.Unmarshal([]byte(payload), &msg) != nil || msg.From == "" {
			return
		}
		switch msg.Op {
		case "a":
			took := msg.Key != "" && len(msg.Answer) <= MaxAnswerBytes && deliver(msg.Key, msg.Answer)
			go func() {
				_, _ = a.publish(context.WithoutCancel(ctx), a.ns+"r:"+msg.From, answerMsg{Op: "r", Nonce: msg.Nonce, From: a.self, OK: took})
			}()
		case "r":
			a.mu.Lock()
			w := a.waiting[msg.Nonce]
			a.mu.Unlock()
			if w != nil {
				select {
				case w <- msg.OK:
				default:
				}
			}
		}
	})
}

// Deliver hands answer under key to replica to and waits at most wait
// for its reply: delivered when a call there took it.
func (a *Answers) Deliver(ctx context.Context, to, key string, answer []byte, wait time.Duration) (bool, error) {
	if len(key) == 0 || len(key) > MaxCancelKeyBytes || len(answer) > MaxAnswerBytes || len(to) > 64 {
		return false, fmt.Errorf("redisstate: an answer of %d bytes under a key of %d bytes for a replica named in %d bytes is over the bounds", len(answer), len(key), len(to))
	}
	ctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	nonce := randomHex(12)
	reply := make(chan bool, 1)
	a.mu.Lock()
	a.waiting[nonce] = reply
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, nonce)
		a.mu.Unlock()
	}()
	n, err := a.publish(ctx, a.ns+"a:"+to, answerMsg{Op: "a", Nonce: nonce, From: a.self, Key: key, Answer: answer})
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrAnswerUndelivered, err)
	}
	if n == 0 {
		// Nobody listens under that name: the replica is gone, its calls
		// with it, or never was: no call awaits the answer.
		return false, nil
	}
	select {
	case ok := <-reply:
		return ok, nil
	case <-ctx.Done():
		return false, fmt.Errorf("%w: replica %q did not reply within %v", ErrAnswerUndelivered, to, wait)
	}
}

func (a *Answers) publish(ctx context.Context, channel string, m answerMsg) (int64, error) {
	return a.c.publishJSON(ctx, channel, m)
}
