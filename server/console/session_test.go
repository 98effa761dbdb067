package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
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
	ctx := context.Background()
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
			s := NewMemorySessions()
			s.Create(ctx, "k", []byte("p"), "h1", t0)
			for _, d := range c.steps {
				if _, ok, _ := s.Lookup(ctx, "k", "h1", t0.Add(d)); !ok {
					t.Fatalf("the session ended at +%s", d)
				}
			}
			if _, ok, _ := s.Lookup(ctx, "k", c.hash, t0.Add(c.at)); ok != c.alive {
				t.Errorf("alive at +%s = %t, want %t (%s)", c.at, ok, c.alive, c.reason)
			}
		})
	}
}

// TestSessionsBounded: past MaxSessions a login ends the least recently
// used session, never more.
func TestSessionsBounded(t *testing.T) {
	s := NewMemorySessions().(*memorySessions)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := func(i int) string { return sessionKey(strings.Repeat("x", i)) }
	for i := range MaxSessions {
		s.Create(ctx, key(i), []byte("p"), "h", t0.Add(time.Duration(i)*time.Millisecond))
	}
	// The first is used now: the second is the least recently used.
	if _, ok, _ := s.Lookup(ctx, key(0), "h", t0.Add(time.Second)); !ok {
		t.Fatal("the first session is not live")
	}
	s.Create(ctx, "new", []byte("p"), "h", t0.Add(2*time.Second))
	if len(s.m) != MaxSessions {
		t.Errorf("%d sessions live, want %d", len(s.m), MaxSessions)
	}
	if _, ok := s.m[key(1)]; ok {
		t.Error("the least recently used session was kept")
	}
	if _, ok := s.m[key(0)]; !ok {
		t.Error("a recently used session was ended")
	}
}

// TestSessionCookie: a session id is 256 random bits, its store key its
// SHA-256 (never the id); a cookie not of an id's form finds no session
// and asks no store.
func TestSessionCookie(t *testing.T) {
	ses, payload, err := newSession(policy.Caller{Subject: "a", Roles: []string{"admin"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ses.id) != 43 || ses.key == ses.id || strings.Contains(string(payload), ses.id) || ses.key != sessionKey(ses.id) {
		t.Errorf("id %q key %q payload %s: want a 43-character id, stored only as its hash", ses.id, ses.key, payload)
	}
	for _, c := range []struct{ value, reason string }{
		{"", "no cookie value"},
		{"nope", "too short"},
		{strings.Repeat("*", 43), "not base64url"},
		{ses.key, "the key (a hash) is not an id"},
	} {
		if _, ok := cookieKey(withCookie(c.value)); ok {
			t.Errorf("cookie %q has a session key (%s)", c.value, c.reason)
		}
	}
	if k, ok := cookieKey(withCookie(ses.id)); !ok || k != ses.key {
		t.Errorf("the session's own cookie: key %q ok %t, want %q", k, ok, ses.key)
	}
	got, err := decodeSession(ses.key, payload)
	if err != nil || got.subject != "a" || !got.admin || got.csrf != ses.csrf {
		t.Errorf("decoded %+v, %v; want the session back", got, err)
	}
	for _, bad := range []string{"", "{", `{"s":"a"}`, `{"c":"x","r":"admin"}`} {
		if _, err := decodeSession("k", []byte(bad)); err == nil {
			t.Errorf("record %q decoded", bad)
		}
	}
}
