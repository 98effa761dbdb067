package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/internal/testca"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
	"github.com/flowdrop/gateway/registry/memstore"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestStoreConfigValidate(t *testing.T) {
	etcd := func(c *StoreConfig) { c.Kind, c.EtcdEndpoints = StoreEtcd, []string{"http://127.0.0.1:2379"} }
	cases := []struct {
		name    string
		reason  string
		edit    func(*StoreConfig)
		wantErr []string // substrings; empty: valid
	}{
		{name: "default", reason: "the default is a bolt file in the default data dir", edit: func(*StoreConfig) {}},
		{name: "memory", reason: "memory needs nothing else", edit: func(c *StoreConfig) { c.Kind = StoreMemory }},
		{name: "etcd", reason: "etcd with one endpoint and the default prefix", edit: etcd},
		{name: "etcd-bare-endpoints", reason: "host:port endpoints are what etcdctl accepts too",
			edit: func(c *StoreConfig) {
				etcd(c)
				c.EtcdEndpoints = []string{"10.0.0.1:2379", "https://etcd.internal:2379"}
			}},
		{name: "bad-kind", reason: "an unknown kind is named with the choices",
			edit: func(c *StoreConfig) { c.Kind = "postgres" }, wantErr: []string{`unknown kind "postgres"`, "bolt, etcd or memory"}},
		{name: "empty-kind", reason: "no silent default for a zero StoreConfig",
			edit: func(c *StoreConfig) { c.Kind = "" }, wantErr: []string{"kind is empty"}},
		{name: "bolt-no-dir", reason: "the bolt file needs a directory",
			edit: func(c *StoreConfig) { c.DataDir = " " }, wantErr: []string{"data directory is empty"}},
		{name: "etcd-no-endpoints", reason: "etcd without endpoints cannot connect",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdEndpoints = nil }, wantErr: []string{"etcd endpoints: none given"}},
		{name: "etcd-bad-scheme", reason: "only http(s) URLs reach etcd's client port",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdEndpoints = []string{"ftp://x:1"} }, wantErr: []string{`"ftp://x:1"`, `scheme "ftp"`}},
		{name: "etcd-no-port", reason: "an endpoint needs a port",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdEndpoints = []string{"etcd.internal"} }, wantErr: []string{`"etcd.internal"`, "host:port"}},
		{name: "etcd-bad-port", reason: "ports are 1..65535",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdEndpoints = []string{"http://x:0"} }, wantErr: []string{`port "0"`}},
		{name: "etcd-empty-endpoint", reason: "a stray comma leaves an empty endpoint",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdEndpoints = []string{"x:1", ""} }, wantErr: []string{`endpoint "": empty`}},
		{name: "etcd-root-prefix", reason: "the registry must not own the whole key space",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdPrefix = "/" }, wantErr: []string{`etcd prefix "/"`}},
		{name: "etcd-relative-prefix", reason: "etcd keys of the fleet start with /",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdPrefix = "flowdrop" }, wantErr: []string{`must start with "/"`}},
		{name: "etcd-timeouts", reason: "every problem is reported at once, each named",
			edit:    func(c *StoreConfig) { etcd(c); c.EtcdDialTimeout, c.EtcdRequestTimeout = 0, -time.Second },
			wantErr: []string{"etcd dial timeout must be positive", "etcd request timeout must be positive, got -1s"}},
		{name: "etcd-tls", reason: "https endpoints with a CA and a client pair",
			edit: func(c *StoreConfig) {
				etcd(c)
				c.EtcdEndpoints = []string{"https://10.0.0.1:2379"}
				c.EtcdCAFile, c.EtcdCertFile, c.EtcdKeyFile = "ca.pem", "gw.pem", "gw-key.pem"
			}},
		{name: "etcd-tls-half-pair", reason: "a client certificate without its key cannot be used",
			edit: func(c *StoreConfig) {
				etcd(c)
				c.EtcdEndpoints, c.EtcdCertFile = []string{"https://10.0.0.1:2379"}, "gw.pem"
			}, wantErr: []string{"certificate and key: give both or neither"}},
		{name: "etcd-tls-files-on-http", reason: "TLS files with plain http endpoints would be silently unused",
			edit: func(c *StoreConfig) { etcd(c); c.EtcdCAFile = "ca.pem" }, wantErr: []string{"use https:// endpoints"}},
		{name: "etcd-settings-ignored-for-bolt", reason: "settings of a kind not chosen are not checked",
			edit: func(c *StoreConfig) { c.EtcdPrefix, c.EtcdEndpoints = "", []string{"nonsense"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultStoreConfig()
			tc.edit(&c)
			err := c.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v (%s)", err, tc.reason)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v (%s)", c, tc.reason)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q (%s)", err, s, tc.reason)
				}
			}
		})
	}
}

func TestConfigToolSources(t *testing.T) {
	cases := []struct {
		name    string
		reason  string
		kind    string
		wantErr bool
	}{
		{name: "bolt", reason: "a durable store may already hold tools: no seed needed", kind: StoreBolt},
		{name: "etcd", reason: "a replica serves what the fleet registered", kind: StoreEtcd},
		{name: "memory", reason: "a memory store without a seed starts empty", kind: StoreMemory, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Store.Kind, c.Store.EtcdEndpoints = tc.kind, []string{"127.0.0.1:2379"}
			err := c.Validate()
			if (err != nil) != tc.wantErr || (err != nil && !strings.Contains(err.Error(), "no tools")) {
				t.Errorf("Validate with no tools file on %s = %v, want error %v (%s)", tc.kind, err, tc.wantErr, tc.reason)
			}
		})
	}
}

func TestOpenStoreChoosesKind(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store.Kind = StoreMemory
	s, err := openStore(cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, ok := s.(*memstore.Store); !ok {
		t.Errorf("memory kind opened %T", s)
	}

	cfg.Store = DefaultStoreConfig()
	cfg.Store.DataDir = filepath.Join(t.TempDir(), "nested", "data")
	s, err = openStore(cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if bs, ok := s.(*boltstore.Store); !ok || bs.Path() != cfg.Store.BoltPath() {
		t.Errorf("bolt kind opened %T at %v; want a bolt store at %s", s, s, cfg.Store.BoltPath())
	}

	cfg.Store.Kind = "nope"
	if _, err := openStore(cfg.Store); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("openStore with a bad kind = %v; want the kind named", err)
	}
}

func TestOpenStoreEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cluster := etcdtest.Start(t)
	cfg := DefaultConfig()
	cfg.Store.Kind, cfg.Store.EtcdEndpoints = StoreEtcd, cluster.Endpoints()
	s, err := openStore(cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	tool := registry.Tool{Name: "t", Backend: "127.0.0.1:1", InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{
		"type": structpb.NewStringValue("object"),
	}}}
	if _, err := s.Put(ctx, tool, nil); err != nil {
		t.Fatalf("Put through the opened etcd store: %v", err)
	}
	// The tools live under the configured prefix, where another replica with
	// the same settings finds them.
	resp, err := cluster.Client(t).Get(ctx, DefaultEtcdPrefix+"/registry/tools/t")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("key %s/registry/tools/t: %v, %d keys; want the tool there", DefaultEtcdPrefix, err, len(resp.Kvs))
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(ctx, "t"); !errors.Is(err, registry.ErrClosed) {
		t.Errorf("Get after Close = %v; want ErrClosed", err)
	}
	// Close also closes the client the store does not own: goleak
	// (TestMain) fails the package on its leftover goroutines otherwise.
}

// TestOpenStoreEtcdTLS: an etcd that serves clients over TLS and requires a
// client certificate is reached with --etcd-ca-file/--etcd-cert-file/
// --etcd-key-file; without the client pair the store's calls fail within
// the request timeout, naming etcd, instead of hanging.
func TestOpenStoreEtcdTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	ca := testca.New(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srvCert, srvKey := ca.Issue(t, "etcd", true)
	cliCert, cliKey := ca.Issue(t, "gateway", false)
	files := etcdtest.TLSFiles{
		CA:         write("ca.pem", ca.PEM),
		ServerCert: write("etcd.pem", srvCert), ServerKey: write("etcd-key.pem", srvKey),
		ClientCert: write("gw.pem", cliCert), ClientKey: write("gw-key.pem", cliKey),
	}
	cluster := etcdtest.Start(t, etcdtest.WithTLS(files))
	if ep := cluster.Endpoints()[0]; !strings.HasPrefix(ep, "https://") {
		t.Fatalf("endpoint %s, want https", ep)
	}
	tool := registry.Tool{Name: "t", Backend: "127.0.0.1:1", InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{
		"type": structpb.NewStringValue("object"),
	}}}

	cfg := DefaultConfig()
	cfg.Store.Kind, cfg.Store.EtcdEndpoints = StoreEtcd, cluster.Endpoints()
	cfg.Store.EtcdCAFile, cfg.Store.EtcdCertFile, cfg.Store.EtcdKeyFile = files.CA, files.ClientCert, files.ClientKey
	s, err := openStore(cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, tool, nil); err != nil {
		t.Fatalf("Put over TLS: %v", err)
	}
	if resp, err := cluster.Client(t).Get(ctx, DefaultEtcdPrefix+"/registry/tools/t"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the tool is not in etcd: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The CA alone: etcd refuses the handshake without a client certificate.
	cfg.Store.EtcdCertFile, cfg.Store.EtcdKeyFile = "", ""
	cfg.Store.EtcdRequestTimeout = 2 * time.Second
	s, err = openStore(cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(ctx, tool, nil); !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), "etcd") {
		t.Errorf("Put without a client certificate = %v; want ErrUnavailable naming etcd", err)
	}

	// A CA file that is not there is named at open.
	cfg.Store.EtcdCAFile = filepath.Join(dir, "missing.pem")
	if _, err := openStore(cfg.Store); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("openStore with a missing CA file = %v; want the file named", err)
	}
}

// TestStartRegistryStoppedDuringAnAttempt: a shutdown that lands while an
// attempt is talking to an unreachable etcd (not while waiting between
// attempts) is the same normal stop — the attempt's error is then the
// cancellation's, which must not read as a start-up failure.
func TestStartRegistryStoppedDuringAnAttempt(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store.Kind, cfg.Store.EtcdEndpoints = StoreEtcd, []string{"http://127.0.0.1:1"}
	cfg.Store.EtcdDialTimeout, cfg.Store.EtcdRequestTimeout = 300*time.Millisecond, 5*time.Second
	s, err := openStore(cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := registry.New(s)
	defer reg.Close()
	tool := registry.Tool{Name: "t", Backend: "127.0.0.1:1", InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{
		"type": structpb.NewStringValue("object"),
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // ended before the first attempt returns
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := startRegistry(ctx, s, reg, []registry.Tool{tool}, registry.Admission{}, cfg.Store, log); !errors.Is(err, ErrStoppedWaiting) {
		t.Fatalf("startRegistry stopped during an attempt = %v; want ErrStoppedWaiting", err)
	}
}
