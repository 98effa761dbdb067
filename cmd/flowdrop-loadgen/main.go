// Command flowdrop-loadgen is the benchmark harness's load driver and its
// reference servers: a minimal backend and a bare (or decoding) pass-through
// proxy. See BENCHMARKS.md and tools/bench/run.sh.
//
//	flowdrop-loadgen drive   --target gateway|direct|proxy --addr 127.0.0.1:P [--conns 4] --mode closed --concurrency 16 --duration 10s
//	flowdrop-loadgen drive   --target ... --mode open --rate 1000 --duration 10s
//	flowdrop-loadgen drive   --face mcp --url http://127.0.0.1:P/mcp --tool echo --expect echo --concurrency 16 --duration 10s
//	                         (either face: [--pid N,M] [--metrics-url URL] [--upstream-stats URL] for the per-call costs)
//	flowdrop-loadgen backend --listen 127.0.0.1:P [--delay 2s]
//	flowdrop-loadgen proxy   --listen 127.0.0.1:P --backend 127.0.0.1:Q [--decode]
//	flowdrop-loadgen mcp-upstream --listen 127.0.0.1:P --stats-listen 127.0.0.1:Q  (go-sdk MCP server, tool echo)
//	flowdrop-loadgen wait    --target ... --addr ... [--timeout 15s] [--call-timeout 1s]
//	flowdrop-loadgen wait    --face mcp --url ... --tool ... --expect echo|backend
//	flowdrop-loadgen summarize < results.jsonl  (medians over rounds and the ratios)
//	flowdrop-loadgen schema  (prints the bench tool's input JSON Schema)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/bareproxy"
	"github.com/flowdrop/gateway/internal/loadgen"
)

const usage = `usage: flowdrop-loadgen <drive|backend|proxy|mcp-upstream|wait|summarize|schema> [flags]
run "flowdrop-loadgen <command> -h" for a command's flags`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "flowdrop-loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "drive":
		return drive(ctx, rest, stdout, stderr)
	case "backend":
		return backend(ctx, rest, stderr)
	case "proxy":
		return proxy(ctx, rest, stderr)
	case "mcp-upstream":
		return mcpUpstream(ctx, rest, stderr)
	case "wait":
		return wait(ctx, rest, stderr)
	case "summarize":
		return summarize(rest, stdout, stderr)
	case "schema":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(loadgen.BenchToolSchema())
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

// loopback rejects anything but a loopback IP literal with a port: the
// harness must never send load off the machine.
func loopback(flagName, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q: %v", flagName, addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--%s %q: host must be a loopback IP such as 127.0.0.1", flagName, addr)
	}
	if port == "" {
		return fmt.Errorf("--%s %q: missing port", flagName, addr)
	}
	return nil
}

func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// dial connects to addr; a non-empty apiKey is sent as x-api-key on every
// call (a per-RPC credential: one map per call, no context rebuilt).
func dial(addr, apiKey string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if apiKey != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(apiKeyCredential{"x-api-key": apiKey}))
	}
	return grpc.NewClient(addr, opts...)
}

// apiKeyCredential sends a fixed API key header. Loopback plaintext only
// (the driver refuses non-loopback addresses), hence no transport security.
type apiKeyCredential map[string]string

func (c apiKeyCredential) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return c, nil
}

func (apiKeyCredential) RequireTransportSecurity() bool { return false }

// targetFlags say what drive and wait call: a gRPC target (--target,
// --addr, --conns) or an MCP endpoint (--face mcp, --url, --tool, --expect).
type targetFlags struct {
	face, target, addr, url, tool, expect, payload, apiKey string
	conns                                                  int
}

func (f *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.face, "face", "grpc", "grpc (--target, --addr) or mcp (--url, --tool, --expect)")
	fs.StringVar(&f.target, "target", "", "gRPC: gateway, direct or proxy")
	fs.StringVar(&f.addr, "addr", "", "gRPC: target address, 127.0.0.1:PORT")
	fs.IntVar(&f.conns, "conns", 1, "gRPC: client connections, calls spread over them round-robin")
	fs.StringVar(&f.url, "url", "", "MCP: streamable-HTTP endpoint, http://127.0.0.1:PORT/PATH")
	fs.StringVar(&f.tool, "tool", loadgen.EchoTool, "MCP: the tool called")
	fs.StringVar(&f.expect, "expect", "echo", "MCP: the answer checked on every call: echo (the arguments) or backend (the bench backend's result)")
	fs.StringVar(&f.payload, "payload", loadgen.PayloadClean, "clean (no repair needed) or repair")
	fs.StringVar(&f.apiKey, "api-key", "", "send this API key (x-api-key) on every call")
}

// label is what names the target when --label does not.
func (f *targetFlags) label() string {
	if f.face == "mcp" {
		return "mcp"
	}
	return f.target
}

// check validates the flags of the chosen face.
func (f *targetFlags) check() error {
	switch f.face {
	case "grpc":
		if _, err := loadgen.MethodFor(f.target); err != nil {
			return fmt.Errorf("--target: %w", err)
		}
		if f.conns < 1 || f.conns > 256 {
			return fmt.Errorf("--conns %d: want 1..256", f.conns)
		}
		if _, err := loadgen.RequestBytes(f.payload); err != nil {
			return fmt.Errorf("--payload: %w", err)
		}
		return loopback("addr", f.addr)
	case "mcp":
		u, err := url.Parse(f.url)
		if err != nil || u.Scheme != "http" {
			return fmt.Errorf("--url %q: want http://127.0.0.1:PORT/PATH", f.url)
		}
		if err := loopback("url", u.Host); err != nil {
			return err
		}
		if f.tool == "" {
			return errors.New("--tool: must not be empty")
		}
		if f.expect != "echo" && f.expect != "backend" {
			return fmt.Errorf("--expect %q: want echo or backend", f.expect)
		}
		if f.payload != loadgen.PayloadClean {
			// A repaired call's echo differs from the arguments sent: only
			// the clean payload has one answer on every MCP target.
			return fmt.Errorf("--payload %q: the MCP face is driven with the clean payload only", f.payload)
		}
		return nil
	}
	return fmt.Errorf("--face %q: want grpc or mcp", f.face)
}

// open connects and returns the call to make; sessions is the number of MCP
// sessions (calls in flight at once).
func (f *targetFlags) open(ctx context.Context, sessions int) (loadgen.Call, func(), error) {
	if f.face == "mcp" {
		args, err := loadgen.MCPArguments(f.payload)
		if err != nil {
			return nil, nil, err
		}
		expect := args
		if f.expect == "echo" {
			text, err := loadgen.EchoText(args)
			if err != nil {
				return nil, nil, err
			}
			expect = json.RawMessage(text)
		} else if expect, err = json.Marshal(loadgen.BackendResult()); err != nil {
			return nil, nil, err
		}
		h := http.Header{}
		if f.apiKey != "" {
			h.Set("X-API-Key", f.apiKey)
		}
		t, err := loadgen.NewMCPTarget(ctx, loadgen.MCPConfig{URL: f.url, Tool: f.tool, Arguments: args,
			Expect: expect, Header: h, Sessions: sessions})
		if err != nil {
			return nil, nil, err
		}
		return t.Call, t.Close, nil
	}
	method, _ := loadgen.MethodFor(f.target)
	body, err := loadgen.RequestBytes(f.payload)
	if err != nil {
		return nil, nil, err
	}
	var ccs []grpc.ClientConnInterface
	var closers []*grpc.ClientConn
	closeAll := func() {
		for _, cc := range closers {
			cc.Close()
		}
	}
	for range f.conns {
		cc, err := dial(f.addr, f.apiKey)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		// Connect now: a lazily connecting client would spend the first
		// calls of the measured window dialling.
		cc.Connect()
		ccs, closers = append(ccs, cc), append(closers, cc)
	}
	return loadgen.NewCallSpread(ccs, method, body), closeAll, nil
}

// parsePIDs reads --pid: process ids, comma-separated.
func parsePIDs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--pid %q: want process ids, comma-separated", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func drive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("drive", flag.ContinueOnError)
	var tf targetFlags
	tf.register(fs)
	mode := fs.String("mode", "closed", "closed (fixed concurrency) or open (fixed rate)")
	conc := fs.Int("concurrency", 16, "closed loop: calls in flight (MCP: one session each)")
	rate := fs.Float64("rate", 1000, "open loop: calls per second")
	maxOut := fs.Int("max-outstanding", 256, "open loop: bound on calls in flight")
	dur := fs.Duration("duration", 10*time.Second, "measured run length")
	warm := fs.Duration("warmup", 0, "unmeasured closed-loop warm-up before the run")
	timeout := fs.Duration("timeout", 5*time.Second, "per-call deadline")
	label := fs.String("label", "", "name for this target in the output (default: the target)")
	round := fs.Int("round", 0, "round number to record in the output")
	pidList := fs.String("pid", "", "process(es) measured, comma-separated: CPU per call and peak RSS (VmHWM) from /proc")
	metricsURL := fs.String("metrics-url", "", "the measured Go process's Prometheus /metrics: bytes allocated per call")
	statsURL := fs.String("upstream-stats", "", "the echo upstream's /stats: new upstream connections per call")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := tf.check(); err != nil {
		return err
	}
	pids, err := parsePIDs(*pidList)
	if err != nil {
		return err
	}
	for name, u := range map[string]string{"metrics-url": *metricsURL, "upstream-stats": *statsURL} {
		if u == "" {
			continue
		}
		if pu, err := url.Parse(u); err != nil || pu.Scheme != "http" {
			return fmt.Errorf("--%s %q: want http://127.0.0.1:PORT/PATH", name, u)
		} else if err := loopback(name, pu.Host); err != nil {
			return err
		}
	}
	if *label == "" {
		*label = tf.label()
	}
	switch {
	case *dur <= 0 || *dur > time.Hour:
		return fmt.Errorf("--duration %v: want between 0 and 1h", *dur)
	case *warm < 0 || *warm > 10*time.Minute:
		return fmt.Errorf("--warmup %v: want between 0 and 10m", *warm)
	case *timeout <= 0:
		return fmt.Errorf("--timeout %v: must be positive", *timeout)
	case *mode == "closed" && (*conc < 1 || *conc > 10000):
		return fmt.Errorf("--concurrency %d: want 1..10000", *conc)
	case *mode == "open" && (*rate <= 0 || *rate > 1e6):
		return fmt.Errorf("--rate %v: want (0, 1e6]", *rate)
	case *mode == "open" && (*maxOut < 1 || *maxOut > 10000):
		return fmt.Errorf("--max-outstanding %d: want 1..10000", *maxOut)
	case *mode != "closed" && *mode != "open":
		return fmt.Errorf("--mode %q: want closed or open", *mode)
	case *mode == "open" && tf.face == "mcp":
		return errors.New("--mode open: the MCP face is driven in a closed loop only (one session per worker)")
	}

	call, closeTarget, err := tf.open(ctx, *conc)
	if err != nil {
		return err
	}
	defer closeTarget()

	if *warm > 0 {
		if _, err := loadgen.RunClosed(ctx, loadgen.ClosedConfig{Concurrency: *conc, Duration: *warm, CallTimeout: *timeout}, call); err != nil {
			return err
		}
	}
	res := loadgen.Result{Label: *label, Round: *round, Target: tf.label(), Mode: *mode, Payload: tf.payload}
	if tf.face == "mcp" {
		res.Face = "mcp"
	} else {
		res.Conns = tf.conns
	}
	probe := loadgen.Probe{PIDs: pids, MetricsURL: *metricsURL, StatsURL: *statsURL}
	if probe.MetricsURL != "" {
		// A process without the Go collector (an older build, another
		// exporter) is measured without its allocations, and says so.
		if _, err := loadgen.AllocatedBytes(ctx, probe.MetricsURL); err != nil {
			fmt.Fprintf(stderr, "flowdrop-loadgen: %s: allocations not measured: %v\n", *label, err)
			probe.MetricsURL = ""
		}
	}
	mark, err := probe.Start(ctx)
	if err != nil {
		return fmt.Errorf("reading the measured process before the run: %w", err)
	}
	var st loadgen.Stats
	if *mode == "closed" {
		res.Concurrency = *conc
		st, err = loadgen.RunClosed(ctx, loadgen.ClosedConfig{Concurrency: *conc, Duration: *dur, CallTimeout: *timeout}, call)
	} else {
		res.Rate, res.MaxOutstanding = *rate, *maxOut
		st, err = loadgen.RunOpen(ctx, loadgen.OpenConfig{
			Rate: *rate, Duration: *dur, MaxOutstanding: *maxOut, CallTimeout: *timeout, Grace: *timeout,
		}, call)
	}
	if err != nil {
		return err
	}
	if err := probe.Finish(ctx, mark, st.Calls, &res); err != nil {
		return fmt.Errorf("reading the measured process after the run: %w", err)
	}
	st.Fill(&res)
	return json.NewEncoder(stdout).Encode(res)
}

// serveFlags are shared by the backend and proxy commands.
type serveFlags struct {
	listen, pprofListen string
	lifetime            time.Duration
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "", "gRPC listen address, 127.0.0.1:PORT")
	fs.StringVar(&f.pprofListen, "pprof-listen", "", "optional net/http/pprof address, 127.0.0.1:PORT")
	fs.DurationVar(&f.lifetime, "lifetime", time.Hour, "exit after this long even if never signalled")
}

func (f *serveFlags) check() error {
	if err := loopback("listen", f.listen); err != nil {
		return err
	}
	if f.pprofListen != "" {
		if err := loopback("pprof-listen", f.pprofListen); err != nil {
			return err
		}
	}
	if f.lifetime <= 0 {
		return fmt.Errorf("--lifetime %v: must be positive", f.lifetime)
	}
	return nil
}

// serve runs srv until ctx ends or the lifetime passes, then stops it.
func serve(ctx context.Context, f serveFlags, srv *grpc.Server, stderr io.Writer) error {
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.lifetime)
	defer cancel()
	if f.pprofListen != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		hs := &http.Server{Addr: f.pprofListen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.ListenAndServe() }()
		defer hs.Close()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	fmt.Fprintf(stderr, "listening on %s\n", lis.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Graceful first, but never longer than a few seconds.
	done := make(chan struct{})
	go func() { srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		srv.Stop()
		<-done
	}
	return nil
}

func backend(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("backend", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	delay := fs.Duration("delay", 0, "answer each call after this long (0: at once); holds calls in flight for the in-flight memory phase")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if *delay < 0 || *delay > time.Hour {
		return fmt.Errorf("--delay %v: want between 0 and 1h", *delay)
	}
	srv := grpc.NewServer()
	var be gatewayv1.ToolBackendServiceServer = loadgen.NewBackend()
	if *delay > 0 {
		be = loadgen.NewSlowBackend(*delay)
	}
	gatewayv1.RegisterToolBackendServiceServer(srv, be)
	return serve(ctx, f, srv, stderr)
}

func proxy(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	be := fs.String("backend", "", "backend address, 127.0.0.1:PORT")
	decode := fs.Bool("decode", false, "decode, walk and re-encode each request instead of passing bytes through")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if err := loopback("backend", *be); err != nil {
		return err
	}
	cc, err := dial(*be, "")
	if err != nil {
		return err
	}
	defer cc.Close()
	p := bareproxy.New(cc, bareproxy.Options{Decode: *decode})
	return serve(ctx, f, grpc.NewServer(p.ServerOptions()...), stderr)
}

// wait retries one real call until it succeeds: the readiness check proves
// the whole chain (e.g. gateway → registered tool → backend), not just a port.
func wait(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	var tf targetFlags
	tf.register(fs)
	timeout := fs.Duration("timeout", 15*time.Second, "give up after this long")
	// Above a slow backend's --delay, or no attempt could ever succeed.
	callTimeout := fs.Duration("call-timeout", time.Second, "deadline of each attempt")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *callTimeout <= 0 {
		return fmt.Errorf("--call-timeout %v: must be positive", *callTimeout)
	}
	if err := tf.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	where := tf.addr
	if tf.face == "mcp" {
		where = tf.url
	}
	var err error
	for {
		// An MCP session is opened afresh each attempt: the endpoint may
		// not have been listening for the last one.
		var call loadgen.Call
		var closeTarget func()
		if call, closeTarget, err = tf.open(ctx, 1); err == nil {
			cctx, ccancel := context.WithTimeout(ctx, *callTimeout)
			err = call(cctx)
			ccancel()
			closeTarget()
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s at %s not ready after %v: last error: %v", tf.label(), where, *timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mcpUpstream serves the echo upstream (streamable HTTP) and its /stats on
// a listener of its own, until signalled or its lifetime passes.
func mcpUpstream(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-upstream", flag.ContinueOnError)
	listen := fs.String("listen", "", "MCP listen address, 127.0.0.1:PORT (any path serves the endpoint)")
	statsListen := fs.String("stats-listen", "", "address of GET /stats (accepted connections, calls), 127.0.0.1:PORT")
	lifetime := fs.Duration("lifetime", time.Hour, "exit after this long even if never signalled")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := loopback("listen", *listen); err != nil {
		return err
	}
	if err := loopback("stats-listen", *statsListen); err != nil {
		return err
	}
	if *lifetime <= 0 {
		return fmt.Errorf("--lifetime %v: must be positive", *lifetime)
	}
	up := loadgen.NewEchoUpstream()
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	slis, err := net.Listen("tcp", *statsListen)
	if err != nil {
		lis.Close()
		return err
	}
	hs := &http.Server{Handler: up.Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	ss := &http.Server{Handler: up.StatsHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ss.Serve(slis) }()
	defer ss.Close()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(up.CountAccepts(lis)) }()
	fmt.Fprintf(stderr, "MCP on http://%s/mcp, stats on http://%s/stats\n", lis.Addr(), slis.Addr())
	ctx, cancel := context.WithTimeout(ctx, *lifetime)
	defer cancel()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	return nil
}

func summarize(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("summarize", flag.ContinueOnError)
	in := fs.String("in", "-", "JSON lines from drive; - for stdin")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	r := io.Reader(os.Stdin)
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	results, err := loadgen.ReadResults(r)
	if err != nil {
		return err
	}
	return loadgen.WriteSummary(stdout, results)
}
