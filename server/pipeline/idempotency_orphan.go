package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/flowdrop/gateway/internal/idempotency"
)

// A Claim that failed may still have been written: the store can apply a
// command and fail before its answer arrives (a Redis primary that dies
// mid-command, its write already replicated). The call is refused
// (idempotency-unavailable) and nothing runs, but the claim would hold the
// key until its lease ends — every retry refused as in progress although
// nothing runs (the chaos soak found keys blocked this way after Redis
// failovers). So the pipeline releases it under the call's own token once
// the store answers again: Release is token-checked, so a claim that was
// never written leaves the key as it is, and another call's claim or
// outcome is never touched. The same holds for a failed run whose
// Release failed (keep): its claim is released the same way.

// maxOrphans bounds the releases in progress at once: during a long store
// outage every keyed call leaves one; past the bound the lease frees the
// key, as before.
const maxOrphans = 1024

// Orphan releases retry from orphanRetryFirst doubling to orphanRetryMax,
// each try bounded by orphanTryTimeout, until the claim's lease would have
// ended anyway.
const (
	orphanRetryFirst = 100 * time.Millisecond
	orphanRetryMax   = 2 * time.Second
	orphanTryTimeout = 2 * time.Second
)

// releaseOrphan releases, in the background, the claim token may have
// left on key.
func (p *Pipeline) releaseOrphan(key string, token idempotency.Token) {
	id := p.cfg.Idempotency
	if p.orphans.Add(1) > maxOrphans {
		p.orphans.Add(-1)
		return
	}
	until := time.Now().Add(id.Lease)
	go func() {
		defer p.orphans.Add(-1)
		wait := orphanRetryFirst
		for {
			ctx, cancel := context.WithTimeout(p.life, orphanTryTimeout)
			err := id.Store.Release(ctx, key, token)
			cancel()
			if err == nil || errors.Is(err, idempotency.ErrClaimLost) {
				return
			}
			if time.Now().Add(wait).After(until) {
				return
			}
			select {
			case <-p.life.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, orphanRetryMax)
		}
	}()
}
