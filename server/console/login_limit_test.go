package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

// TestLoginRateLimitPerSource: failed logins are limited per client
// address — one source past its burst is refused (429) while another still
// gets its credential checked — and in all: many sources together stop at
// the global ceiling. An IPv6 /64 is one source; the table of sources is
// bounded. Driven through the login handler with a fixed clock.
func TestLoginRateLimitPerSource(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	newConsole := func(checks *int) *Console {
		c := New(Config{
			Authenticate: func(context.Context, policy.Credentials) (policy.Caller, error) {
				*checks++
				return policy.Caller{}, &policy.Error{Code: policy.Unauthenticated, Message: "API key not recognised"}
			},
			PolicyHash: func() string { return "h" },
			Log:        slog.New(slog.DiscardHandler),
		})
		c.now = func() time.Time { return t0 }
		return c
	}
	login := func(c *Console, remote string) int {
		r := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(url.Values{"credential": {"guess"}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		c.Handler().ServeHTTP(w, r)
		return w.Code
	}
	type attempt struct {
		remote string
		n      int
		status int // of the last of the n attempts
	}
	for _, tc := range []struct {
		name, reason string
		steps        []attempt
	}{
		{"one source", "a source past its burst is refused without a credential check",
			[]attempt{{"192.0.2.1:1000", LoginBurstPerSource, http.StatusUnauthorized}, {"192.0.2.1:1001", 1, http.StatusTooManyRequests}}},
		{"other source", "another address is not locked out by the first",
			[]attempt{{"192.0.2.1:1000", LoginBurstPerSource + 5, http.StatusTooManyRequests}, {"198.51.100.7:2000", 1, http.StatusUnauthorized}}},
		{"ipv6 /64", "addresses in one /64 share a bucket",
			[]attempt{{"[2001:db8:1:2::1]:1000", LoginBurstPerSource, http.StatusUnauthorized}, {"[2001:db8:1:2::ffff]:1000", 1, http.StatusTooManyRequests},
				{"[2001:db8:1:3::1]:1000", 1, http.StatusUnauthorized}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var checks int
			c := newConsole(&checks)
			for i, s := range tc.steps {
				var got int
				for range s.n {
					got = login(c, s.remote)
				}
				if got != s.status {
					t.Fatalf("step %d (%s ×%d) = %d, want %d (%s)", i, s.remote, s.n, got, s.status, tc.reason)
				}
			}
		})
	}
	t.Run("global ceiling", func(t *testing.T) {
		var checks int
		c := newConsole(&checks)
		for i := range LoginBurstGlobal {
			if got := login(c, fmt.Sprintf("10.0.%d.%d:1", i/250, i%250+1)); got != http.StatusUnauthorized {
				t.Fatalf("failure %d from a fresh address = %d, want 401", i, got)
			}
		}
		if got := login(c, "203.0.113.9:1"); got != http.StatusTooManyRequests {
			t.Errorf("a fresh address past the global ceiling = %d, want 429 (many sources together are bounded)", got)
		}
		if checks != LoginBurstGlobal {
			t.Errorf("%d credential checks, want %d: a refused login costs none", checks, LoginBurstGlobal)
		}
		if n := c.failedLogins.sources.Len(); n > MaxLoginSources {
			t.Errorf("%d sources kept, over MaxLoginSources %d", n, MaxLoginSources)
		}
	})
	t.Run("bounded table", func(t *testing.T) {
		l := newLoginLimits()
		for i := range MaxLoginSources + 100 {
			l.failed(source(&http.Request{RemoteAddr: fmt.Sprintf("10.%d.%d.1:1", i/256, i%256)}), t0)
		}
		if n := l.sources.Len(); n != MaxLoginSources {
			t.Errorf("%d sources kept, want the LRU bound %d", n, MaxLoginSources)
		}
	})
}
