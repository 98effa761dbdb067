package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/internal/redistest"
)

// The soak's tools: echo and echo_limited on the balanced backends,
// mcp_echo on the MCP upstream. echo_limited has the fleet's one rate
// limit (rate_limit.fallback deny: never more than the bucket).
const (
	toolEcho    = "echo"
	toolLimited = "echo_limited"
	toolMCP     = "mcp_echo"
)

// etcdPrefix is the fleet's key space; the registry is under
// etcdPrefix/registry (docs/registry.md), where the etcd probe writes.
const etcdPrefix = "/flowdrop-chaos"

// Fleet is everything the soak runs: etcd, Redis behind Sentinel, the
// backends, the MCP upstream and the gateway replicas.
type Fleet struct {
	dir      string
	Etcd     *etcdtest.Cluster
	Redis    *redistest.Sentinel
	Backends []*Backend
	Upstream *Upstream
	Replicas []*Replica
	// BackendRuns and UpstreamRuns count each request id's runs.
	BackendRuns, UpstreamRuns *runs
	limit                     limit
}

// limit is echo_limited's bucket.
type limit struct {
	Rate  float64 `json:"rate"`
	Burst int     `json:"burst"`
}

// startFleet starts the fleet; t's cleanups stop it.
func startFleet(t testing.TB, bin string, replicas int, lim limit) *Fleet {
	t.Helper()
	f := &Fleet{dir: t.TempDir(), BackendRuns: newRuns(), UpstreamRuns: newRuns(), limit: lim}
	f.Etcd = etcdtest.Start(t)
	f.Redis = redistest.StartSentinel(t)
	for i := range 2 {
		b, err := startBackend(fmt.Sprintf("b%d", i), f.BackendRuns, toolEcho, toolLimited)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		f.Backends = append(f.Backends, b)
	}
	u, err := startUpstream(f.UpstreamRuns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	f.Upstream = u
	tools := filepath.Join(f.dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte(f.toolsFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range replicas {
		r, err := f.newReplica(i, bin, tools)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Kill)
		f.Replicas = append(f.Replicas, r)
	}
	// One at a time: each seeds the tools file into etcd at start.
	for _, r := range f.Replicas {
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *Fleet) toolsFile() string {
	schema := `{type: object, additionalProperties: false, required: ["id", "n"], properties: {"id": {type: string, maxLength: 128}, "n": {type: integer}}}`
	balanced := "static:///" + f.Backends[0].Addr + "," + f.Backends[1].Addr
	return fmt.Sprintf(`tools:
  - {name: %[1]s, description: Echoes id and 2n+1., backend: %[2]q, timeout: 3s, input_schema: %[5]s}
  - {name: %[3]s, description: Echoes id and 2n+1 under a fleet rate limit., backend: %[2]q, timeout: 3s, input_schema: %[5]s}
  - {name: %[4]s, description: Echoes id:2n+1 from an MCP upstream., spec: {mcp_tool: {url: %[6]q, tool: %[7]s}}, timeout: 3s, input_schema: %[5]s}
`, toolEcho, balanced, toolLimited, toolMCP, schema, f.Upstream.URL, upstreamTool)
}

// policyFile is a replica's policy: no authentication (one anonymous
// caller, so echo_limited is one fleet-wide bucket), the limit with
// fallback deny, its own audit file, fail-closed.
func policyFile(audit string, lim limit) string {
	return fmt.Sprintf(`auth: {mode: "off"}
authz: {default: {allow: ["*"]}}
rate_limit: {rate: 0, tools: [{match: %q, rate: %v, burst: %d}], fallback: deny}
audit: {path: %q, on_failure: fail-closed}
idempotency: {ttl: 1h}
`, toolLimited, lim.Rate, lim.Burst, audit)
}

// Replica is one gateway process; Kill and Start take it away (SIGKILL)
// and bring it back on the same ports, audit file and flags.
type Replica struct {
	Index                       int
	GRPCAddr, MCPURL, AdminAddr string
	AuditPath                   string
	bin                         string
	args                        []string
	log                         string
	mu                          sync.Mutex
	cmd                         *exec.Cmd
	exited                      chan struct{}
}

func (f *Fleet) newReplica(i int, bin, tools string) (*Replica, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	r := &Replica{Index: i, GRPCAddr: ports[0], MCPURL: "http://" + ports[1] + "/mcp", AdminAddr: ports[2],
		AuditPath: filepath.Join(f.dir, fmt.Sprintf("audit-%d.jsonl", i)), bin: bin,
		log: filepath.Join(f.dir, fmt.Sprintf("gateway-%d.log", i))}
	pol := filepath.Join(f.dir, fmt.Sprintf("policy-%d.yaml", i))
	if err := os.WriteFile(pol, []byte(policyFile(r.AuditPath, f.limit)), 0o600); err != nil {
		return nil, err
	}
	r.args = []string{"--listen", ports[0], "--mcp-listen", ports[1], "--admin-listen", ports[2],
		"--policy", pol, "--tools", tools,
		"--store", "etcd", "--etcd-endpoints", strings.Join(f.Etcd.Endpoints(), ","), "--etcd-prefix", etcdPrefix,
		"--redis-mode", "sentinel", "--redis-addr", f.Redis.Addrs(), "--redis-sentinel-master", redistest.MasterName,
		// A keyed call's claim outlives a replica killed mid-call by
		// --max-call-timeout + 30 s: longer than a caller's retries.
		"--max-call-timeout", "5s", "--shutdown-grace", "1s", "--log-level", "warn"}
	return r, nil
}

func freePorts(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// startTimeout bounds waiting for a replica's /readyz: a guard against
// hanging, not a speed claim (the report has the measured times).
const startTimeout = 90 * time.Second

// Start runs the replica and waits until /readyz answers 200.
func (r *Replica) Start() error {
	logf, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.bin, r.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		select {
		case <-exited:
			return fmt.Errorf("replica %d exited while starting; its log ends:\n%s", r.Index, tail(r.log))
		case <-ctx.Done():
			return fmt.Errorf("replica %d not ready after %v; its log ends:\n%s", r.Index, startTimeout, tail(r.log))
		case <-time.After(100 * time.Millisecond):
		}
		if ready(ctx, "http://"+r.AdminAddr+"/readyz") {
			return nil
		}
	}
}

func ready(ctx context.Context, url string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Kill ends the process with SIGKILL (no shutdown: what a crash does);
// a no-op when it is not running.
func (r *Replica) Kill() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// tail is the end of a log file, for a failure message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
