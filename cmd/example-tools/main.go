// Command example-tools runs the example tool service (internal/demotools) on
// its own, for a gateway started with --tools pointing at it:
//
//	go run ./cmd/example-tools --listen 127.0.0.1:7001 --print-tools > tools.yaml
//	go run ./cmd/flowdrop-gateway --tools tools.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/flowdrop/gateway/internal/demotools"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "example-tools:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:7001", "address to serve the example ToolBackendService on")
	printTools := flag.Bool("print-tools", false, "print the demo tools file (backends set to --listen) to stdout, then serve")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	addr := lis.Addr().String()
	if *printTools {
		os.Stdout.Write(demotools.ToolsYAML(addr))
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	gs := demotools.NewGRPCServer(demotools.New(), logger)
	logger.Info("example tools serving", "addr", addr)

	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		gs.GracefulStop()
		return nil
	}
}
