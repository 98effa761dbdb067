package console

import (
	"context"
	"slices"
	"sync"
	"time"
)

// memorySessions is this process's session store: a replica's sessions
// are its own (no Redis configured).
type memorySessions struct {
	mu sync.Mutex
	m  map[string]*memorySession
}

type memorySession struct {
	key        string
	payload    []byte
	policyHash string // the policy in force at login
	created    time.Time
	lastSeen   time.Time
}

// NewMemorySessions is a store in this process's memory.
func NewMemorySessions() SessionStore { return &memorySessions{m: map[string]*memorySession{}} }

// expired: idle too long, alive too long, or logged in under another
// policy ("" skips that check).
func (ses *memorySession) expired(now time.Time, policyHash string) bool {
	return now.Sub(ses.lastSeen) > SessionIdle || now.Sub(ses.created) > SessionLifetime ||
		(policyHash != "" && policyHash != ses.policyHash)
}

func (s *memorySessions) Create(_ context.Context, key string, payload []byte, policyHash string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range s.m {
		if o.expired(now, "") {
			delete(s.m, k)
		}
	}
	if len(s.m) >= MaxSessions {
		victims := make([]*memorySession, 0, len(s.m))
		for _, o := range s.m {
			victims = append(victims, o)
		}
		oldest := slices.MinFunc(victims, func(a, b *memorySession) int { return a.lastSeen.Compare(b.lastSeen) })
		delete(s.m, oldest.key)
	}
	s.m[key] = &memorySession{key: key, payload: payload, policyHash: policyHash, created: now, lastSeen: now}
	return nil
}

func (s *memorySessions) Lookup(_ context.Context, key, policyHash string, now time.Time) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.m[key]
	if !ok {
		return nil, false, nil
	}
	if ses.expired(now, policyHash) {
		delete(s.m, key)
		return nil, false, nil
	}
	ses.lastSeen = now
	return ses.payload, true, nil
}

func (s *memorySessions) End(_ context.Context, key string) error {
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
	return nil
}

// Retire drops the sessions under policyHash (a lookup would end them
// anyway: this process's policy is no longer it).
func (s *memorySessions) Retire(_ context.Context, policyHash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range s.m {
		if o.policyHash == policyHash {
			delete(s.m, k)
		}
	}
	return nil
}

func (s *memorySessions) Ping(context.Context) error { return nil }
