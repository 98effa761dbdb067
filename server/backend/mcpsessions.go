package backend

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flowdrop/gateway/server/pipeline"
)

// Bounds on the per-caller sessions of an upstream MCP server. Under a
// non-static identity mode each caller subject gets a session of its own
// (mcpUpstreamKey.subject), so without a bound every new subject would
// cost the gateway and the upstream a session for the gateway's lifetime.
const (
	// DefaultMCPSubjectSessions is how many per-caller sessions one
	// upstream keeps at most.
	DefaultMCPSubjectSessions = 256
	// DefaultMCPSubjectSessionIdle is how long a per-caller session is
	// kept without a call.
	DefaultMCPSubjectSessionIdle = 10 * time.Minute
)

// Eviction reasons, as CountMCPSessionEviction hears them.
const (
	EvictionCap  = "cap"  // the least recently used made room for a new subject
	EvictionIdle = "idle" // unused for the idle time
)

// errSubjectSessionsFull: the upstream has its cap of per-caller sessions
// and every one has a call in flight (none to evict).
var errSubjectSessionsFull = errors.New("every per-caller session of the upstream has a call in flight")

// subjectCap and subjectIdle are the configured bounds (defaults for 0).
func (m *MCPUpstream) subjectCap() int {
	if n := m.ts.cfg.MCPSubjectSessions; n > 0 {
		return n
	}
	return DefaultMCPSubjectSessions
}

func (m *MCPUpstream) subjectIdle() time.Duration {
	if d := m.ts.cfg.MCPSubjectSessionIdle; d > 0 {
		return d
	}
	return DefaultMCPSubjectSessionIdle
}

// makeRoomLocked is called before a session for a new subject of k's
// upstream is added: at the cap, it evicts the least recently used
// session of that upstream with no call in flight, or is
// errSubjectSessionsFull. m.mu is held.
func (m *MCPUpstream) makeRoomLocked(k mcpUpstreamKey) error {
	m.startSweeper()
	shared := k.shared()
	var keys []mcpUpstreamKey
	for ok := range m.sessions {
		if ok.subject != "" && ok.shared() == shared {
			keys = append(keys, ok)
		}
	}
	if len(keys) < m.subjectCap() {
		return nil
	}
	slices.SortFunc(keys, func(a, b mcpUpstreamKey) int {
		return cmp.Compare(m.sessions[a].used.Load(), m.sessions[b].used.Load())
	})
	for _, ok := range keys {
		if m.tryEvictLocked(ok, m.sessions[ok], EvictionCap) {
			return nil
		}
	}
	return errSubjectSessionsFull
}

// tryEvictLocked forgets s and closes its session in the background if no
// call is in flight on it and it is not being made (it never waits on
// s.mu, held while a session connects). A call that took s from the map
// just before finds it retired and looks again (session). m.mu is held.
func (m *MCPUpstream) tryEvictLocked(k mcpUpstreamKey, s *mcpUpstreamSession, reason string) bool {
	if !s.mu.TryLock() {
		return false
	}
	if s.calls != 0 {
		s.mu.Unlock()
		return false
	}
	delete(m.sessions, k)
	s.retired = true
	open := s.cs != nil
	m.closeIdle(s)
	s.mu.Unlock()
	if open {
		if count := m.ts.cfg.CountMCPSessionEviction; count != nil {
			count(reason)
		}
		if log := m.ts.cfg.Log; log != nil {
			// The subject is the caller's name, not a secret; the URL is
			// the operator's.
			log.Info("mcp upstream session evicted", "reason", reason, "upstream", k.url, "subject", k.subject)
		}
	}
	return true
}

// expireIdle evicts the per-caller sessions unused since before now less
// the idle time.
func (m *MCPUpstream) expireIdle(now time.Time) {
	cutoff := now.Add(-m.subjectIdle()).UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, s := range m.sessions {
		if k.subject != "" && s.used.Load() < cutoff {
			m.tryEvictLocked(k, s, EvictionIdle)
		}
	}
}

// startSweeper starts, once, the goroutine that expires idle per-caller
// sessions (only a gateway that makes one runs it); Close stops it. m.mu
// is held.
func (m *MCPUpstream) startSweeper() {
	if m.sweepStop != nil || m.closed {
		return
	}
	m.sweepStop = make(chan struct{})
	every := min(max(m.subjectIdle()/4, time.Second), time.Minute)
	stop := m.sweepStop
	m.sweeping.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				m.expireIdle(now)
			}
		}
	})
}

// subjectSessionsFull is the call's refusal when errSubjectSessionsFull:
// Unavailable (a retry soon finds a session free), naming the tool only.
func (m *MCPUpstream) subjectSessionsFull(c *pipeline.Call) *pipeline.Error {
	return &pipeline.Error{Code: pipeline.Unavailable, Reason: pipeline.ReasonBackendUnavailable, Tool: c.Tool, Cause: errSubjectSessionsFull,
		Message: fmt.Sprintf("tool %q: its upstream MCP server has its %d sessions for callers all in use; retry shortly", c.Tool, m.subjectCap())}
}
