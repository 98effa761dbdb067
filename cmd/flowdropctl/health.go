package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

var healthCommand = &command{
	name:    "health",
	summary: "ask the gateway's gRPC health service; exit 0 when SERVING (for container health checks)",
	run: interruptible(func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runHealth(ctx, args, stdout, stderr)
	}),
}

const healthUsage = `usage: flowdropctl health [--service NAME] [--timeout D] [connection flags]

Calls grpc.health.v1.Health/Check on the gateway and prints the status.
Exit codes: 0 SERVING, 1 anything else (NOT_SERVING, unreachable, timed
out), 2 bad usage. The health service needs no credentials, so this works
in a container's health check (the image has no shell).

`

// runHealth implements `flowdropctl health`.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, healthUsage+connHelp); fs.PrintDefaults() }
	conn := addConnFlags(fs)
	service := fs.String("service", "", `service to ask about ("" is the whole server)`)
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	out := addOutputFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // the usage was asked for, and printed
		}
		return 2
	}
	if fs.NArg() > 0 || *timeout <= 0 {
		fs.Usage()
		return 2
	}
	cc, err := conn.dial(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "flowdropctl health:", err)
		return 2
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: *service})
	if err != nil {
		if out.json {
			return writeJSONError(stdout, err)
		}
		fmt.Fprintln(stderr, "flowdropctl health:", err)
		return 1
	}
	if out.json {
		writeJSON(stdout, map[string]string{"status": resp.GetStatus().String()})
	} else {
		fmt.Fprintln(stdout, resp.GetStatus())
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return 1
	}
	return 0
}
