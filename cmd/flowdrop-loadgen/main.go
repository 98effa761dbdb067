// Command flowdrop-loadgen is the benchmark harness's load driver and its
// reference servers: a minimal backend and a bare (or decoding) pass-through
// proxy. See BENCHMARKS.md and tools/bench/run.sh.
//
//	flowdrop-loadgen drive   --target gateway|direct|proxy --addr 127.0.0.1:P --mode closed --concurrency 16 --duration 10s
//	flowdrop-loadgen drive   --target ... --mode open --rate 1000 --duration 10s
//	flowdrop-loadgen backend --listen 127.0.0.1:P [--delay 2s]
//	flowdrop-loadgen proxy   --listen 127.0.0.1:P --backend 127.0.0.1:Q [--decode]
//	flowdrop-loadgen wait    --target ... --addr ... [--timeout 15s] [--call-timeout 1s]
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
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/bareproxy"
	"github.com/flowdrop/gateway/internal/loadgen"
)

const usage = `usage: flowdrop-loadgen <drive|backend|proxy|wait|summarize|schema> [flags]
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

func drive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("drive", flag.ContinueOnError)
	target := fs.String("target", "", "gateway, direct or proxy")
	addr := fs.String("addr", "", "target address, 127.0.0.1:PORT")
	mode := fs.String("mode", "closed", "closed (fixed concurrency) or open (fixed rate)")
	conc := fs.Int("concurrency", 16, "closed loop: calls in flight")
	rate := fs.Float64("rate", 1000, "open loop: calls per second")
	maxOut := fs.Int("max-outstanding", 256, "open loop: bound on calls in flight")
	dur := fs.Duration("duration", 10*time.Second, "measured run length")
	warm := fs.Duration("warmup", 0, "unmeasured closed-loop warm-up before the run")
	payload := fs.String("payload", loadgen.PayloadClean, "clean (no repair needed) or repair")
	timeout := fs.Duration("timeout", 5*time.Second, "per-call deadline")
	label := fs.String("label", "", "name for this target in the output (default: the target)")
	round := fs.Int("round", 0, "round number to record in the output")
	apiKey := fs.String("api-key", "", "send this API key (x-api-key) on every call")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	method, err := loadgen.MethodFor(*target)
	if err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	if err := loopback("addr", *addr); err != nil {
		return err
	}
	body, err := loadgen.RequestBytes(*payload)
	if err != nil {
		return fmt.Errorf("--payload: %w", err)
	}
	if *label == "" {
		*label = *target
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
	}

	cc, err := dial(*addr, *apiKey)
	if err != nil {
		return err
	}
	defer cc.Close()
	call := loadgen.NewCall(cc, method, body)

	if *warm > 0 {
		if _, err := loadgen.RunClosed(ctx, loadgen.ClosedConfig{Concurrency: *conc, Duration: *warm, CallTimeout: *timeout}, call); err != nil {
			return err
		}
	}
	res := loadgen.Result{Label: *label, Round: *round, Target: *target, Mode: *mode, Payload: *payload}
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
	target := fs.String("target", "", "gateway, direct or proxy")
	addr := fs.String("addr", "", "target address, 127.0.0.1:PORT")
	payload := fs.String("payload", loadgen.PayloadClean, "clean or repair")
	timeout := fs.Duration("timeout", 15*time.Second, "give up after this long")
	// Above a slow backend's --delay, or no attempt could ever succeed.
	callTimeout := fs.Duration("call-timeout", time.Second, "deadline of each attempt")
	apiKey := fs.String("api-key", "", "send this API key (x-api-key) on every call")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *callTimeout <= 0 {
		return fmt.Errorf("--call-timeout %v: must be positive", *callTimeout)
	}
	method, err := loadgen.MethodFor(*target)
	if err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	if err := loopback("addr", *addr); err != nil {
		return err
	}
	body, err := loadgen.RequestBytes(*payload)
	if err != nil {
		return fmt.Errorf("--payload: %w", err)
	}
	cc, err := dial(*addr, *apiKey)
	if err != nil {
		return err
	}
	defer cc.Close()
	call := loadgen.NewCall(cc, method, body)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, *callTimeout)
		err = call(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s at %s not ready after %v: last error: %v", *target, *addr, *timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
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
