// Package redisstate is the gateway's state shared by every replica, kept
// in Redis: rate-limit buckets (GCRA, one Lua script, so each decision is
// atomic across replicas), the idempotency store, the MCP task records,
// and the pub/sub that carries a caller's cancellation to the replica
// running its call (cancels.go). Every command has a
// short timeout, so a slow Redis delays a call by at most that much; the
// callers decide what an error means (policy: the configured fallback).
package redisstate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
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

// Config is how the gateway reaches Redis. Empty Addr: no Redis (every
// replica keeps its own state).
type Config struct {
	Addr string // host:port
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

// Validate reports every problem, each naming the setting (redis.*).
func (c Config) Validate() error {
	if !c.On() {
		if c.PasswordFile != "" || c.Username != "" || c.TLS != (TLSConfig{}) {
			return errors.New("config: redis: settings given without redis addr")
		}
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: redis: "+format, args...)) }
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil || host == "" {
		bad("addr %q: want host:port", c.Addr)
	} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		bad("addr %q: port must be a number in 1..65535", c.Addr)
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
	rdb     *redis.Client
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
	opt := &redis.Options{Addr: c.Addr, Username: c.Username, DB: c.DB,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		// Each command's context deadline (ours) bounds its network I/O too.
		ContextTimeoutEnabled: true,
		// Retries would multiply the timeout; the next call tries again.
		MaxRetries: -1,
		// No CLIENT SETINFO on each new connection (Redis before 7.2 refuses it).
		DisableIdentity: true,
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
			tc.ServerName, _, _ = net.SplitHostPort(c.Addr)
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
	return &Client{rdb: redis.NewClient(opt), timeout: timeout}, nil
}

// Ping checks Redis answers (start-up logs the outcome).
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.rdb.Ping(ctx).Err()
}

// Close closes the pool.
func (c *Client) Close() error { return c.rdb.Close() }
