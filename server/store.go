package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
	"github.com/flowdrop/gateway/registry/etcdstore"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server/backend"
)

// Store kinds (StoreConfig.Kind).
const (
	// StoreBolt is the embedded, durable default: one bbolt file in the data
	// directory, for a single gateway.
	StoreBolt = "bolt"
	// StoreEtcd shares one registry between several gateway replicas.
	StoreEtcd = "etcd"
	// StoreMemory keeps the registry in memory only (tests, throwaway demos):
	// everything registered is lost on exit.
	StoreMemory = "memory"
)

// Store defaults.
const (
	// DefaultDataDir is relative to the working directory, like etcd's own
	// "default.etcd": `go run ./cmd/flowdrop-gateway` works on a fresh
	// machine with no HOME or XDG setup, the state is visible next to where
	// the gateway was started, and two checkouts never share a registry.
	DefaultDataDir = "flowdrop-data"
	// BoltFileName is the bbolt file inside the data directory.
	BoltFileName              = "registry.db"
	DefaultEtcdPrefix         = "/flowdrop"
	DefaultEtcdDialTimeout    = 5 * time.Second
	DefaultEtcdRequestTimeout = etcdstore.DefaultTimeout
)

// StoreConfig chooses and configures the registry's store: the source of
// truth the tools file seeds and the ToolRegistryService writes to.
type StoreConfig struct {
	// Kind is StoreBolt, StoreEtcd or StoreMemory.
	Kind string
	// DataDir holds the bolt file (DataDir/registry.db); created if missing.
	DataDir string
	// EtcdEndpoints are the etcd client URLs ("http://10.0.0.1:2379" or
	// "10.0.0.1:2379").
	EtcdEndpoints []string
	// EtcdPrefix is the key space the registry owns in etcd; every replica
	// of one gateway fleet must use the same prefix.
	EtcdPrefix string
	// EtcdDialTimeout bounds connecting to etcd.
	EtcdDialTimeout time.Duration
	// EtcdRequestTimeout bounds each etcd call: past it a write fails with
	// Unavailable (naming etcd) instead of hanging.
	EtcdRequestTimeout time.Duration
	// EtcdReconnectMaxDelay caps the etcd client's back-off between
	// connection attempts (<= 0: backend.DefaultReconnectMaxDelay, 1 s).
	// gRPC's own cap is 120 s: after a 47 s outage a replica reached etcd
	// 27.6 s after it was back, serving a stale registry meanwhile.
	EtcdReconnectMaxDelay time.Duration
	// TLS to etcd, for https:// endpoints: EtcdCAFile is the PEM bundle
	// that verifies etcd's certificate (empty: the system roots);
	// EtcdCertFile and EtcdKeyFile are the gateway's client certificate for
	// an etcd that requires one (--client-cert-auth), given together.
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string

	// RetryFirst and RetryMax pace Start's attempts to reach an
	// unreachable store: the first wait, doubled each time up to the cap.
	// The cap is how late a replica that started during an outage may
	// notice etcd's return; one attempt a second costs etcd nothing.
	RetryFirst, RetryMax time.Duration
}

// DefaultStoreConfig is a bolt store in DefaultDataDir, with the etcd
// settings defaulted for when Kind is switched to etcd.
func DefaultStoreConfig() StoreConfig {
	return StoreConfig{
		Kind:                  StoreBolt,
		DataDir:               DefaultDataDir,
		EtcdPrefix:            DefaultEtcdPrefix,
		EtcdDialTimeout:       DefaultEtcdDialTimeout,
		EtcdRequestTimeout:    DefaultEtcdRequestTimeout,
		EtcdReconnectMaxDelay: backend.DefaultReconnectMaxDelay,
		RetryFirst:            250 * time.Millisecond,
		RetryMax:              time.Second,
	}
}

// BoltPath is the bolt file the bolt store uses.
func (c *StoreConfig) BoltPath() string { return filepath.Join(c.DataDir, BoltFileName) }

// Validate reports every problem with the store settings, each naming the
// setting. Settings of the kinds not chosen are not checked.
func (c *StoreConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: store: "+format, args...)) }
	switch c.Kind {
	case StoreMemory:
	case StoreBolt:
		if strings.TrimSpace(c.DataDir) == "" {
			bad("data directory is empty: the bolt store needs a directory for %s", BoltFileName)
		}
	case StoreEtcd:
		if len(c.EtcdEndpoints) == 0 {
			bad("etcd endpoints: none given: the etcd store needs at least one (e.g. http://127.0.0.1:2379)")
		}
		for _, ep := range c.EtcdEndpoints {
			if msg := checkEtcdEndpoint(ep); msg != "" {
				bad("etcd endpoint %q: %s", ep, msg)
			}
		}
		if p := strings.Trim(c.EtcdPrefix, "/"); p == "" {
			bad("etcd prefix %q: must name a key space (e.g. %q), not the root", c.EtcdPrefix, DefaultEtcdPrefix)
		} else if !strings.HasPrefix(c.EtcdPrefix, "/") {
			bad("etcd prefix %q: must start with \"/\"", c.EtcdPrefix)
		}
		if c.EtcdDialTimeout <= 0 {
			bad("etcd dial timeout must be positive, got %v", c.EtcdDialTimeout)
		}
		if c.EtcdRequestTimeout <= 0 {
			bad("etcd request timeout must be positive, got %v", c.EtcdRequestTimeout)
		}
		if c.EtcdReconnectMaxDelay < 0 {
			bad("etcd reconnect max delay must not be negative, got %v", c.EtcdReconnectMaxDelay)
		}
		if c.RetryFirst <= 0 || c.RetryMax < c.RetryFirst {
			bad("retry waits must be positive with the cap at least the first wait, got %v and %v", c.RetryFirst, c.RetryMax)
		}
		if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
			bad("etcd client certificate and key: give both or neither (cert %q, key %q)", c.EtcdCertFile, c.EtcdKeyFile)
		}
		if c.etcdTLSFiles() && !c.etcdTLS() {
			bad("etcd TLS files are set but every endpoint is plain http: use https:// endpoints")
		}
	case "":
		bad("kind is empty; want %s, %s or %s", StoreBolt, StoreEtcd, StoreMemory)
	default:
		bad("unknown kind %q; want %s, %s or %s", c.Kind, StoreBolt, StoreEtcd, StoreMemory)
	}
	return errors.Join(errs...)
}

// etcdTLSFiles reports whether any etcd TLS file is set.
func (c *StoreConfig) etcdTLSFiles() bool {
	return c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != ""
}

// etcdTLS reports whether the etcd client speaks TLS: some endpoint is https.
func (c *StoreConfig) etcdTLS() bool {
	for _, ep := range c.EtcdEndpoints {
		if strings.HasPrefix(ep, "https://") {
			return true
		}
	}
	return false
}

// etcdTLSConfig is the etcd client's TLS configuration, built by etcd's own
// transport.TLSInfo (TLS 1.2 or newer, the CA bundle as roots, the client
// pair), or nil for plain http endpoints.
func (c *StoreConfig) etcdTLSConfig() (*tls.Config, error) {
	if !c.etcdTLS() {
		return nil, nil
	}
	info := transport.TLSInfo{CertFile: c.EtcdCertFile, KeyFile: c.EtcdKeyFile, TrustedCAFile: c.EtcdCAFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd TLS (CA %q, cert %q, key %q): %w", c.EtcdCAFile, c.EtcdCertFile, c.EtcdKeyFile, err)
	}
	return cfg, nil
}

// checkEtcdEndpoint returns why ep is not an etcd client endpoint, or "".
func checkEtcdEndpoint(ep string) string {
	if ep == "" {
		return "empty"
	}
	hostPort := ep
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return err.Error()
		}
		switch u.Scheme {
		case "http", "https":
		default:
			return fmt.Sprintf("scheme %q: want http or https", u.Scheme)
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return "want scheme://host:port only (no user, path or query)"
		}
		hostPort = u.Host
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "want host:port: " + err.Error()
	}
	if host == "" {
		return "host is empty"
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Sprintf("port %q is not a number in 1..65535", port)
	}
	return ""
}

// String describes the store for logs, e.g. "bolt file flowdrop-data/registry.db".
func (c *StoreConfig) String() string {
	switch c.Kind {
	case StoreBolt:
		return "bolt file " + c.BoltPath()
	case StoreEtcd:
		return fmt.Sprintf("etcd %s under %s", strings.Join(c.EtcdEndpoints, ","), c.EtcdPrefix)
	}
	return c.Kind
}

// openStore is THE one place the registry's store is chosen (no init()
// registration): cfg.Store.Kind picks the implementation. The caller closes
// the returned store; for etcd that also closes the client.
func openStore(sc StoreConfig) (registry.Store, error) {
	switch sc.Kind {
	case StoreMemory:
		return memstore.New(), nil
	case StoreBolt:
		s, err := boltstore.Open(sc.BoltPath())
		if err != nil {
			return nil, fmt.Errorf("opening the registry store: %w", err)
		}
		return s, nil
	case StoreEtcd:
		// clientv3.New does not wait for etcd: an unreachable etcd shows up
		// on the first call, bounded by the request timeout.
		tlsCfg, err := sc.etcdTLSConfig()
		if err != nil {
			return nil, fmt.Errorf("opening the registry store: %w", err)
		}
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   sc.EtcdEndpoints,
			DialTimeout: sc.EtcdDialTimeout,
			TLS:         tlsCfg,
			// The client's own logs are retry noise; failures reach the
			// gateway's log as store errors naming etcd.
			Logger: zap.NewNop(),
			// gRPC's default back-off grows to 120 s while etcd is down, so
			// a replica would find etcd's return up to that late.
			DialOptions: []grpc.DialOption{backend.ConnectParams(sc.EtcdReconnectMaxDelay)},
		})
		if err != nil {
			return nil, fmt.Errorf("opening the registry store: etcd client for %s: %w", strings.Join(sc.EtcdEndpoints, ","), err)
		}
		s, err := etcdstore.New(cli, sc.EtcdPrefix+"/registry", etcdstore.WithTimeout(sc.EtcdRequestTimeout))
		if err != nil {
			cli.Close()
			return nil, fmt.Errorf("opening the registry store: %w", err)
		}
		return &clientClosingStore{Store: s, closeClient: cli.Close}, nil
	}
	return nil, fmt.Errorf("config: store: unknown kind %q", sc.Kind) // unreachable after Validate
}

// clientClosingStore closes the etcd client the store does not own. It
// embeds the etcd store itself, so its Ping (registry.Pinger) shows.
type clientClosingStore struct {
	*etcdstore.Store
	closeClient func() error
}

func (s *clientClosingStore) Close() error {
	return errors.Join(s.Store.Close(), s.closeClient())
}

// startRegistry seeds the store with the start-up tools and starts the
// registry. While the store is unreachable (etcd down: ErrUnavailable) it
// waits and tries again, logging each attempt, until ctx ends — rather
// than exiting: a fleet restarting during an etcd outage then comes back by
// itself within seconds of etcd, not after an orchestrator's crash-loop
// back-off. Any other error (a bad tool, a corrupt file) stops start-up.
func startRegistry(ctx context.Context, store registry.Store, reg *registry.Registry, tools []registry.Tool, adm registry.Admission, sc StoreConfig, log *slog.Logger) error {
	wait := sc.RetryFirst
	for {
		err := registry.SeedWith(ctx, store, tools, adm)
		if err != nil {
			err = fmt.Errorf("loading tools: %w", err)
		} else if err = reg.Start(ctx); err != nil {
			err = fmt.Errorf("starting the registry: %w", err)
		}
		if err != nil && ctx.Err() != nil {
			// Shut down during an attempt: the attempt's error is the
			// cancellation's (context canceled), not the store's.
			log.Info("stopped before the registry store answered")
			return ErrStoppedWaiting
		}
		if err == nil || !errors.Is(err, registry.ErrUnavailable) {
			return err
		}
		log.Warn("registry store unreachable; not serving until it answers", "error", err.Error(), "retry_in", wait)
		select {
		case <-ctx.Done(): // shut down while waiting: a normal stop
			log.Info("stopped before the registry store answered")
			return ErrStoppedWaiting
		case <-time.After(wait):
		}
		wait = min(2*wait, sc.RetryMax)
	}
}
