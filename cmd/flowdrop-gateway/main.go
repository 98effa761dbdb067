// Command flowdrop-gateway runs the FlowDrop tool gateway.
//
// With no flags it serves the demo tools on 127.0.0.1:7443, backed by the
// example tool service it starts in-process, and prints a call to try.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flowdrop/gateway/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses flags into a server.Config and runs the gateway until ctx ends.
// It returns the process exit code (2: bad usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "flowdrop-gateway:", err)
		return 2
	}
	if err := server.Run(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "flowdrop-gateway:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stdout, stderr io.Writer) (server.Config, error) {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("flowdrop-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.ListenAddr, "listen", cfg.ListenAddr, "address to serve gRPC on")
	fs.StringVar(&cfg.ToolsFile, "tools", "", "declarative tools file (YAML or JSON); default: the embedded demo tools")
	demo := fs.Bool("demo", false, "start the example tool service in-process and register the demo tools (default: on when --tools is not given)")
	fs.DurationVar(&cfg.DefaultTimeout, "default-timeout", cfg.DefaultTimeout, "backend call timeout when neither the caller nor the tool sets one")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", cfg.ShutdownGrace, "how long shutdown waits for calls in flight")
	fs.IntVar(&cfg.MaxRecvMsgSize, "max-recv-msg-size", cfg.MaxRecvMsgSize, "largest request accepted from agents, bytes")
	fs.IntVar(&cfg.MaxSendMsgSize, "max-send-msg-size", cfg.MaxSendMsgSize, "largest response sent to agents, bytes")
	fs.IntVar(&cfg.BackendMaxRecvMsgSize, "backend-max-recv-msg-size", cfg.BackendMaxRecvMsgSize, "largest response accepted from backends, bytes")
	fs.IntVar(&cfg.BackendMaxSendMsgSize, "backend-max-send-msg-size", cfg.BackendMaxSendMsgSize, "largest request sent to backends, bytes")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	// --demo defaults to on only when no tools file is given; an explicit
	// --demo or --demo=false always wins.
	cfg.Demo = cfg.ToolsFile == ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "demo" {
			cfg.Demo = *demo
		}
	})
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return cfg, fmt.Errorf("--log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Out = stdout
	return cfg, cfg.Validate()
}
