package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/mcptasks"
)

// TaskRelay carries a task request of a stdio or legacy SSE upstream to
// the replica holding the task's connection (mcptasks.Relay), over Redis
// pub/sub — the fleet's one shared engine, so no port of its own:
//
//  1. the asking replica publishes the request on the holder's own channel
//     (ns + "q:" + its id); PUBLISH answers how many subscribed, so 0 says
//     at once that no replica of that id runs any more;
//  2. the holder runs it (at most MaxRelayed at once; more are answered
//     busy) and publishes the answer on the asker's channel (ns + "r:" +
//     its id) — an answer over relayInlineBytes is left under a key of
//     its own (ns + "a:" + the request's nonce, expiring within
//     relayAnswerKeep) that the asker takes with GETDEL, so a large
//     tasks/result never sits in a subscriber's output buffer.
//
// The asker waits until its request's budget ends (a tasks/result waits
// for the task's end, which can take minutes), the holder a little less
// (relayMargin), so an upstream too slow for the budget is answered as a
// timeout rather than as a silent holder.
type TaskRelay struct {
	c    *Client
	ns   string
	self string

	asking   chan struct{} // requests this replica waits on
	handling chan struct{} // requests this replica runs

	mu      sync.Mutex
	waiting map[string]chan relayMsg // nonce → the holder's answer
	serving bool
}

// TaskRelay returns the fleet's task relay under namespace ns (e.g.
// "flowdrop:taskrelay:"), with a random id for this replica.
func (c *Client) TaskRelay(ns string) *TaskRelay {
	return &TaskRelay{c: c, ns: ns, self: randomHex(12), waiting: map[string]chan relayMsg{},
		asking: make(chan struct{}, MaxRelayed), handling: make(chan struct{}, MaxRelayed)}
}

var _ mcptasks.Relay = (*TaskRelay)(nil)

const (
	// MaxRelayed bounds the relayed requests one replica waits on at once,
	// and those it runs for others.
	MaxRelayed = 64
	// relayInlineBytes is the largest answer carried in its message.
	relayInlineBytes = 64 << 10
	// maxRelayMsgBytes bounds a message read from the channels: anything
	// longer is not the gateway's and is dropped.
	maxRelayMsgBytes = relayInlineBytes + mcptasks.MaxRelayRequestBytes + 1024
	// (a request carrying an answer, mcptasks.MaxRelayAnswerBytes, is
	// within it too)
	// relayAnswerKeep is how long an answer left under a key waits for its
	// asker to take it.
	relayAnswerKeep = 30 * time.Second
	// relayMargin is how much sooner than its asker the holder gives up,
	// so its answer (a timeout) still reaches the asker.
	relayMargin = 500 * time.Millisecond
	// maxRelayWait bounds a relayed request's budget (the gateway's own
	// call timeouts are far below it).
	maxRelayWait = time.Hour
)

// relayMsg is one message on the channels.
type relayMsg struct {
	Op    string `json:"o"` // "q" request, "r" answer
	Nonce string `json:"n"`
	From  string `json:"f"`
	// "q": the request and the asker's budget (ms).
	Req  *mcptasks.RelayRequest `json:"q,omitempty"`
	Wait int64                  `json:"w,omitempty"`
	// "r": the answer, or Stored (it is under the nonce's key), or Busy.
	Ans    *mcptasks.RelayAnswer `json:"a,omitempty"`
	Stored bool                  `json:"s,omitempty"`
	Busy   bool                  `json:"b,omitempty"`
}

// Self is this replica's id.
func (s *TaskRelay) Self() string { return s.self }

// Serve runs handle for the requests relayed to this replica and hands
// the answers to its own requests to their askers, until ctx ends.
func (s *TaskRelay) Serve(ctx context.Context, handle func(context.Context, mcptasks.RelayRequest) mcptasks.RelayAnswer) {
	defer s.setServing(false)
	var running sync.WaitGroup
	defer running.Wait()
	subscribed := func(channel string, on bool) {
		// Askers wait until their answers' channel is subscribed.
		if channel == s.ns+"r:"+s.self {
			s.setServing(on)
		}
	}
	s.c.listen(ctx, []string{s.ns + "q:" + s.self, s.ns + "r:" + s.self}, maxRelayMsgBytes, subscribed, func(channel, payload string) {
		var msg relayMsg
		if json.Unmarshal([]byte(payload), &msg) != nil || msg.Nonce == "" || len(msg.Nonce) > 64 || msg.From == "" || len(msg.From) > 64 {
			return
		}
		switch {
		case msg.Op == "q" && channel == s.ns+"q:"+s.self:
			if msg.Req == nil || msg.Req.Check() != nil || msg.Wait <= 0 {
				return
			}
			select {
			case s.handling <- struct{}{}:
			default:
				go s.answer(context.WithoutCancel(ctx), msg, relayMsg{Op: "r", Nonce: msg.Nonce, From: s.self, Busy: true})
				return
			}
			running.Go(func() {
				defer func() { <-s.handling }()
				wait := min(time.Duration(msg.Wait)*time.Millisecond, maxRelayWait) - relayMargin
				hctx, stop := context.WithTimeout(ctx, max(wait, 0))
				ans := handle(hctx, *msg.Req)
				stop()
				s.answer(context.WithoutCancel(ctx), msg, relayMsg{Op: "r", Nonce: msg.Nonce, From: s.self, Ans: &ans})
			})
		case msg.Op == "r" && channel == s.ns+"r:"+s.self:
			s.mu.Lock()
			w := s.waiting[msg.Nonce]
			s.mu.Unlock()
			if w != nil {
				select {
				case w <- msg:
				default: // a second answer: not the holder's
				}
			}
		}
	})
}

func (s *TaskRelay) setServing(on bool) {
	s.mu.Lock()
	s.serving = on
	s.mu.Unlock()
}

// answer sends reply to the asker of req: in the message, or under the
// nonce's key when it is large (taken back when no one listens).
func (s *TaskRelay) answer(ctx context.Context, req, reply relayMsg) {
	to := s.ns + "r:" + req.From
	if reply.Ans != nil && len(reply.Ans.Result) > relayInlineBytes {
		b, err := json.Marshal(reply.Ans)
		if err != nil {
			return
		}
		key := s.ns + "a:" + req.Nonce
		cctx, cancel := context.WithTimeout(ctx, s.c.timeout)
		err = s.c.rdb.Set(cctx, key, b, relayAnswerKeep).Err()
		cancel()
		if err != nil {
			return // the asker times out: Redis failed it
		}
		reply.Ans, reply.Stored = nil, true
		if n, err := s.c.publishJSON(ctx, to, reply); err != nil || n == 0 {
			cctx, cancel := context.WithTimeout(ctx, s.c.timeout)
			s.c.rdb.Del(cctx, key)
			cancel()
		}
		return
	}
	_, _ = s.c.publishJSON(ctx, to, reply)
}

// Ask relays req to replica holder and waits for its answer until ctx
// ends (at most maxRelayWait; with no deadline, that).
func (s *TaskRelay) Ask(ctx context.Context, holder string, req mcptasks.RelayRequest) (mcptasks.RelayAnswer, error) {
	unavailable := func(format string, a ...any) (mcptasks.RelayAnswer, error) {
		return mcptasks.RelayAnswer{}, fmt.Errorf("%w: "+format, append([]any{mcptasks.ErrHolderUnavailable}, a...)...)
	}
	if err := req.Check(); err != nil {
		return mcptasks.RelayAnswer{}, err
	}
	if holder == "" || len(holder) > 64 {
		return unavailable("no replica id")
	}
	select {
	case s.asking <- struct{}{}:
		defer func() { <-s.asking }()
	default:
		return unavailable("this replica already waits on %d relayed requests", MaxRelayed)
	}
	ctx, stop := context.WithTimeout(ctx, maxRelayWait)
	defer stop()
	deadline, _ := ctx.Deadline()
	nonce := randomHex(12)
	reply := make(chan relayMsg, 1)
	s.mu.Lock()
	serving := s.serving
	s.waiting[nonce] = reply
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, nonce)
		s.mu.Unlock()
	}()
	if !serving {
		return unavailable("this replica is not subscribed to its answers")
	}
	n, err := s.c.publishJSON(ctx, s.ns+"q:"+holder, relayMsg{Op: "q", Nonce: nonce, From: s.self, Req: &req,
		Wait: max(time.Until(deadline).Milliseconds(), 1)})
	switch {
	case err != nil:
		return unavailable("%v", err)
	case n == 0:
		return unavailable("no replica of that id runs")
	}
	var msg relayMsg
	select {
	case msg = <-reply:
	case <-ctx.Done():
		return unavailable("no answer in time")
	}
	switch {
	case msg.Busy:
		return unavailable("it runs %d relayed requests already", MaxRelayed)
	case msg.Stored:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.timeout)
		b, err := s.c.rdb.GetDel(cctx, s.ns+"a:"+nonce).Bytes()
		cancel()
		if err != nil {
			if errors.Is(err, redis.Nil) {
				return unavailable("its answer was gone")
			}
			return unavailable("%v", err)
		}
		if int64(len(b)) > req.Limit+maxRelayMsgBytes {
			return mcptasks.RelayAnswer{Failure: mcptasks.FailureTooLarge}, nil
		}
		var ans mcptasks.RelayAnswer
		if json.Unmarshal(b, &ans) != nil {
			return unavailable("its answer does not decode")
		}
		return ans, nil
	case msg.Ans != nil:
		return *msg.Ans, nil
	}
	return unavailable("an empty answer")
}
