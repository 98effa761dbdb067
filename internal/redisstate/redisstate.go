// Package redisstate is the gateway's state shared by every replica, kept
// in Redis: rate-limit buckets (GCRA, one Lua script, so each decision is
// atomic across replicas), the idempotency store, the MCP task records,
// the console's login sessions, and the pub/sub that carries a caller's cancellation to the replica
// running its call (cancels.go) and a stdio or legacy SSE upstream's task
// request to the replica holding the task's connection (taskrelay.go). Redis is one server, a primary found
// through Sentinel, or a Cluster (go-redis's universal client); every
// script touches keys of one hash slot, so each runs on a Cluster too.
// Every command has a short timeout, so a slow Redis delays a call by at
// most that much; the callers decide what an error means (policy: the
// configured fallback).
package redisstate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTimeout bounds each Redis command unless Config.Timeout says
// otherwise: far above a healthy Redis's round trip on a LAN, far below
// what a caller would notice.
const DefaultTimeout = 100 * time.Millisecond

// The deployments of Redis the gateway reaches (Config.Mode).
const (
	// ModeSingle is one Redis server at Addr (the default).
	ModeSingle = "single"
	// ModeSentinel asks the Sentinels at Addr for the primary of
	// SentinelMaster, and again after a failover.
	ModeSentinel = "sentinel"
	// ModeCluster is a Redis Cluster; Addr names one or more of its nodes,
	// the rest are discovered.
	ModeCluster = "cluster"
)

// Config is how the gateway reaches Redis. Empty Addr: no Redis (every
// replica keeps its own state).
type Config struct {
	// Addr is host:port — for Sentinel and Cluster a comma-separated list
	// (the Sentinels; some of the Cluster's nodes).
	Addr string
	// Mode is ModeSingle (""), ModeSentinel or ModeCluster.
	Mode string
	// SentinelMaster is the name the Sentinels monitor the primary under
	// (ModeSentinel only).
	SentinelMaster string
	// SentinelPasswordFile holds the Sentinels' own password, if they
	// require one (ModeSentinel only).
	SentinelPasswordFile string
	// Username and the password (read from PasswordFile, never given on a
	// command line) authenticate with Redis ACLs; both optional.
	Username     string
	PasswordFile string
	DB           int
	TLS          TLSConfig
	// Timeout bounds each command (dial, write, read); 0: DefaultTimeout.
	Timeout time.Duration
}

// TLSConfig is the client side of TLS to Redis. Enabled with no CAFile
// verifies against the system roots.
type TLSConfig struct {
	Enabled           bool
	CAFile            string
	CertFile, KeyFile string // a client certificate, if Redis asks for one
	ServerName        string // overrides the host name checked in the certificate
}

// On reports whether Redis is configured.
func (c Config) On() bool { return c.Addr != "" }

// Addrs is Addr split at commas.
func (c Config) Addrs() []string {
	var out []string
	for _, a := range strings.Split(c.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Validate reports every problem, each naming the setting (redis.*).
func (c Config) Validate() error {
	if !c.On() {
		if c.PasswordFile != "" || c.Username != "" || c.TLS != (TLSConfig{}) || c.Mode != "" ||
			c.SentinelMaster != "" || c.SentinelPasswordFile != "" {
			return errors.New("config: redis: settings given without redis addr")
		}
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: redis: "+format, args...)) }
	addrs := c.Addrs()
	if len(addrs) == 0 {
		bad("addr %q: want host:port", c.Addr)
	}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			bad("addr %q: want host:port", a)
		} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			bad("addr %q: port must be a number in 1..65535", a)
		}
	}
	switch c.Mode {
	case "", ModeSingle:
		if len(addrs) > 1 {
			bad("addr names %d servers: a single Redis is one host:port (mode sentinel or cluster for several)", len(addrs))
		}
	case ModeSentinel:
		if c.SentinelMaster == "" {
			bad("mode sentinel needs the monitored primary's name (sentinel master)")
		}
	case ModeCluster:
		if c.DB != 0 {
			bad("a Redis Cluster has only database 0, got db %d", c.DB)
		}
	default:
		bad("mode %q: want single, sentinel or cluster", c.Mode)
	}
	if c.Mode != ModeSentinel && (c.SentinelMaster != "" || c.SentinelPasswordFile != "") {
		bad("sentinel settings given without mode sentinel")
	}
	if c.DB < 0 {
		bad("db must not be negative, got %d", c.DB)
	}
	if c.Timeout < 0 {
		bad("timeout must not be negative, got %v", c.Timeout)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls cert and key files go together")
	}
	return errors.Join(errs...)
}

// Client is the shared state's connection pool.
type Client struct {
	rdb     redis.UniversalClient
	timeout time.Duration
}

// Open builds the client (reading the password and TLS files); it does
// not wait for Redis, which may come up later: commands fail until then.
func Open(c Config) (*Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	opt := &redis.UniversalOptions{Addrs: c.Addrs(), Username: c.Username, DB: c.DB,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		// Each command's context deadline (ours) bounds its network I/O too.
		ContextTimeoutEnabled: true,
		// Retries would multiply the timeout; the next call tries again.
		MaxRetries: -1,
		// No CLIENT SETINFO on each new connection (Redis before 7.2 refuses it).
		DisableIdentity: true,
	}
	switch c.Mode {
	case ModeSentinel:
		opt.MasterName = c.SentinelMaster
		if c.SentinelPasswordFile != "" {
			b, err := os.ReadFile(c.SentinelPasswordFile)
			if err != nil {
				return nil, fmt.Errorf("config: redis: sentinel password file: %w", err)
			}
			opt.SentinelPassword = strings.TrimRight(string(b), "\r\n")
		}
	case ModeCluster:
		// Also with one seed address; a redirect (MOVED, ASK) is followed
		// at most this often, so a resharding costs a bounded number of
		// round trips within the command's deadline.
		opt.IsClusterMode = true
		opt.MaxRedirects = 3
	}
	if c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("config: redis: password file: %w", err)
		}
		opt.Password = strings.TrimRight(string(b), "\r\n")
	}
	if c.TLS.Enabled || c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.ServerName != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TLS.ServerName}
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(c.Addrs()[0])
		}
		if c.TLS.CAFile != "" {
			pem, err := os.ReadFile(c.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("config: redis: tls ca file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("config: redis: tls ca file %s: no PEM certificates", c.TLS.CAFile)
			}
		}
		if c.TLS.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("config: redis: tls client certificate: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		opt.TLSConfig = tc
	}
	return &Client{rdb: redis.NewUniversalClient(opt), timeout: timeout}, nil
}

// Ping checks Redis answers (start-up logs the outcome).
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.rdb.Ping(ctx).Err()
}

// Close closes the pool.
func (c *Client) Close() error { return c.rdb.Close() }

// SetLogger sends go-redis's own messages (a Sentinel's new primary, a
// pool's failed dials) to l at Debug: the gateway logs Redis's outages and
// returns once itself, and the client's per-dial lines would repeat on
// every call while Redis is away. go-redis keeps one logger per process.
func SetLogger(l *slog.Logger) { redis.SetLogger(debugLogger{l}) }

type debugLogger struct{ l *slog.Logger }

func (d debugLogger) Printf(ctx context.Context, format string, v ...any) {
	if d.l.Enabled(ctx, slog.LevelDebug) {
		d.l.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
	}
}
