package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// readyTimeout bounds how long Start and Restart wait for the member to
// serve; a guard against hanging, not a speed assertion.
const readyTimeout = 30 * time.Second

// Cluster is one embedded etcd member.
type Cluster struct {
	t         testing.TB
	dir       string
	tls       *TLSFiles
	clientURL url.URL
	peerURL   url.URL
	mu        sync.Mutex
	etcd      *embed.Etcd
}

// TLSFiles are PEM files for a member that serves clients over TLS and
// requires a client certificate signed by CA.
type TLSFiles struct {
	CA                    string // verifies both sides
	ServerCert, ServerKey string // the member's, for 127.0.0.1
	ClientCert, ClientKey string // what Client presents
}

// Option configures Start.
type Option func(*Cluster)

// WithTLS makes the member serve clients on https:// with client
// certificate authentication (the peer URL stays plain: one member).
func WithTLS(f TLSFiles) Option { return func(c *Cluster) { c.tls = &f } }

// Start starts a member and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, dir: t.TempDir()}
	for _, o := range opts {
		o(c)
	}
	scheme := "http"
	if c.tls != nil {
		scheme = "https"
	}
	// embed needs concrete ports (the advertised URLs must match what it
	// listens on), so pick free ones; retry in case another process grabs
	// one between the probe and etcd's listen.
	var lastErr error
	for range 5 {
		cp, pp, err := freePorts()
		if err != nil {
			t.Fatalf("etcdtest: pick ports: %v", err)
		}
		c.clientURL = url.URL{Scheme: scheme, Host: cp}
		c.peerURL = url.URL{Scheme: "http", Host: pp}
		if lastErr = c.start(); lastErr == nil {
			t.Cleanup(c.Stop)
			return c
		}
	}
	t.Fatalf("etcdtest: start: %v", lastErr)
	return nil
}

func freePorts() (client, peer string, err error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", err
		}
		ls = append(ls, l)
	}
	return ls[0].Addr().String(), ls[1].Addr().String(), nil
}

func (c *Cluster) config() *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = c.dir
	cfg.ListenClientUrls = []url.URL{c.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{c.clientURL}
	cfg.ListenPeerUrls = []url.URL{c.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{c.peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// No metrics listener: the default would bind a fixed port.
	cfg.ListenMetricsUrls = nil
	if c.tls != nil {
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: c.tls.ServerCert, KeyFile: c.tls.ServerKey,
			TrustedCAFile: c.tls.CA, ClientCertAuth: true}
	}
	return cfg
}

func (c *Cluster) start() error {
	e, err := embed.StartEtcd(c.config())
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(readyTimeout):
		e.Close()
		return fmt.Errorf("etcd not ready after %s", readyTimeout)
	}
	c.mu.Lock()
	c.etcd = e
	c.mu.Unlock()
	return nil
}

// Endpoints returns the client URLs, stable across Restart.
func (c *Cluster) Endpoints() []string { return []string{c.clientURL.String()} }

// Stop stops the member; it is a no-op when already stopped.
func (c *Cluster) Stop() {
	c.mu.Lock()
	e := c.etcd
	c.etcd = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

// Restart starts the stopped member again on the same data directory and
// ports, so clients reconnect and keep their revisions.
func (c *Cluster) Restart() {
	c.t.Helper()
	c.Stop()
	var err error
	// The old listeners are closed by Stop; retry briefly in case the kernel
	// has not released a port yet.
	for range 10 {
		if err = c.start(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("etcdtest: restart: %v", err)
}

// Client returns a client for the member, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
	if c.tls != nil {
		tc, err := transport.TLSInfo{CertFile: c.tls.ClientCert, KeyFile: c.tls.ClientKey, TrustedCAFile: c.tls.CA}.ClientConfig()
		if err != nil {
			t.Fatalf("etcdtest: client TLS: %v", err)
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
