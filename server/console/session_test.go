package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

func withCookie(id string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/console/", nil)
	r.AddCookie(&http.Cookie{Name: sessionCookieName, Value: id})
	return r
}

// TestSessionLifetime: a session ends when idle past SessionIdle, alive
// past SessionLifetime, or the policy in force changed; used, it stays.
func TestSessionLifetime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var everyTwenty []time.Duration // used every 20 minutes up to the lifetime
	for d := 20 * time.Minute; d < SessionLifetime; d += 20 * time.Minute {
		everyTwenty = append(everyTwenty, d)
	}
	for _, c := range []struct {
		name, reason string
		steps        []time.Duration // uses, as offsets from login
		at           time.Duration
		hash         string
		alive        bool
	}{
		{"fresh", "just logged in", nil, time.Minute, "h1", true},
		{"idle", "unused past the idle bound", nil, SessionIdle + time.Second, "h1", false},
		{"kept-alive", "used often enough, within the lifetime", []time.Duration{20 * time.Minute, 40 * time.Minute, 60 * time.Minute}, 80 * time.Minute, "h1", true},
		{"lifetime", "used often, but past the absolute lifetime", everyTwenty, SessionLifetime + time.Second, "h1", false},
		{"reloaded", "the policy in force changed", nil, time.Minute, "h2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s sessions
			ses := s.create(policy.Caller{Subject: "a"}, true, "h1", t0)
			for _, d := range c.steps {
				if _, ok := s.lookup(withCookie(ses.id), t0.Add(d), "h1"); !ok {
					t.Fatalf("the session ended at +%s", d)
				}
			}
			if _, ok := s.lookup(withCookie(ses.id), t0.Add(c.at), c.hash); ok != c.alive {
				t.Errorf("alive at +%s = %t, want %t (%s)", c.at, ok, c.alive, c.reason)
			}
		})
	}
}

// TestSessionsBounded: past MaxSessions a login ends the least recently
// used session, never more; an unknown or empty cookie is no session.
func TestSessionsBounded(t *testing.T) {
	var s sessions
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]string, MaxSessions)
	for i := range MaxSessions {
		ids[i] = s.create(policy.Caller{Subject: "a"}, false, "h", t0.Add(time.Duration(i)*time.Millisecond)).id
	}
	// The first is used now: the second is the least recently used.
	if _, ok := s.lookup(withCookie(ids[0]), t0.Add(time.Second), "h"); !ok {
		t.Fatal("the first session is not live")
	}
	s.create(policy.Caller{Subject: "b"}, false, "h", t0.Add(2*time.Second))
	if len(s.m) != MaxSessions {
		t.Errorf("%d sessions live, want %d", len(s.m), MaxSessions)
	}
	if _, ok := s.m[ids[1]]; ok {
		t.Error("the least recently used session was kept")
	}
	if _, ok := s.m[ids[0]]; !ok {
		t.Error("a recently used session was ended")
	}
	for _, id := range []string{"", "nope"} {
		if _, ok := s.lookup(withCookie(id), t0.Add(3*time.Second), "h"); ok {
			t.Errorf("cookie %q found a session", id)
		}
	}
}
