package console

import (
	"net"
	"net/http"
	"net/netip"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Failed-login limits. Each failed login costs a credential check (a key
// hash, a JWT verification) and guessing must be slow; but one source
// must not lock every operator out. So each client address has its own
// bucket (a burst of LoginBurstPerSource, then one every
// LoginEveryPerSource), the addresses are an LRU table of at most
// MaxLoginSources, and a global ceiling (LoginBurstGlobal, then
// LoginRateGlobal a second) bounds what many sources together cost.
const (
	LoginBurstPerSource = 10
	LoginEveryPerSource = 2 * time.Second
	LoginBurstGlobal    = 200
	LoginRateGlobal     = 10
	MaxLoginSources     = 4096
)

// loginLimits are the failed-login buckets: per source and global.
type loginLimits struct {
	sources *lru.Cache[netip.Prefix, *rate.Limiter]
	global  *rate.Limiter
}

func newLoginLimits() *loginLimits {
	// lru.New fails only for a size below 1.
	sources, _ := lru.New[netip.Prefix, *rate.Limiter](MaxLoginSources)
	return &loginLimits{sources: sources, global: rate.NewLimiter(LoginRateGlobal, LoginBurstGlobal)}
}

// source is the request's client address as the limit keys it: an IPv4
// address, or an IPv6 address's /64 (one host usually holds a whole /64).
// The listener's peer address only: a forwarded-for header is the
// caller's to write. An address that does not parse shares one bucket.
func source(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// refused says why a login from src is refused before its credential is
// checked ("" : it may be checked).
func (l *loginLimits) refused(src netip.Prefix, now time.Time) string {
	if b, ok := l.sources.Peek(src); ok && b.TokensAt(now) < 1 {
		return "too many failed logins from this address: wait a few seconds"
	}
	if l.global.TokensAt(now) < 1 {
		return "too many failed logins on this console: wait a few seconds"
	}
	return ""
}

// failed charges a failed login from src to its bucket and the global one.
func (l *loginLimits) failed(src netip.Prefix, now time.Time) {
	b, ok := l.sources.Get(src)
	if !ok {
		b = rate.NewLimiter(rate.Every(LoginEveryPerSource), LoginBurstPerSource)
		if prev, found, _ := l.sources.PeekOrAdd(src, b); found {
			b = prev // another failure from src added its bucket first
		}
	}
	b.AllowN(now, 1)
	l.global.AllowN(now, 1)
}
