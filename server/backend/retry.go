package backend

import (
	"context"
	"math/rand/v2"
	"time"
)

// Retries of idempotent tools (annotations idempotent_hint): a call that
// fails Unavailable — the backend was down, or said it was — is made again,
// up to retryAttempts calls in all, after a jittered exponential back-off,
// within the call's deadline budget. With a balanced target the next
// attempt goes to the next ready replica. Other tools are called exactly
// once: the backend may have acted on a call it failed to answer.
const (
	retryAttempts  = 3
	retryBaseDelay = 25 * time.Millisecond
)

// retryWait waits before attempt+1 (attempt ≥ 1): retryBaseDelay doubled
// per attempt, from half to all of it at random. It reports false — no
// retry — when the wait would not end before the deadline or ctx ends
// first.
func retryWait(ctx context.Context, attempt int) bool {
	d := retryBaseDelay << (attempt - 1)
	d = d/2 + rand.N(d/2+1)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
