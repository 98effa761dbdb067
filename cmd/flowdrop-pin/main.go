// Command flowdrop-pin measures what a peer without credentials can make a
// gateway hold (RELIABILITY.md, "An unauthenticated peer"): it starts a
// built gateway binary as a subprocess (demo tools, memory store, an API
// key required, on 127.0.0.1), and for each probe opens one connection
// whose streams each announce a large request message, send all the
// gateway lets them but the last byte, and hold it. It prints the
// gateway's resident memory (VmRSS) before, while held and after the
// streams ended, its peak (VmHWM), what became of the streams, and
// whether an authenticated call was served meanwhile.
//
//	go build -o /tmp/gw ./cmd/flowdrop-gateway
//	go run ./cmd/flowdrop-pin --gateway /tmp/gw
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/h2pin"
	"github.com/flowdrop/gateway/internal/policy"
)

const apiKey = "fd_pin_probe_key" // the one credential the started gateway accepts

func main() {
	bin := flag.String("gateway", "", "path of a built flowdrop-gateway binary")
	streams := flag.Int("streams", 40, "streams on the probe's connection")
	size := flag.Int("message-bytes", 4<<20-64, "length each unfinished message announces")
	hold := flag.Duration("hold", 3*time.Second, "how long to hold the streams before sampling")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "--gateway is required")
		os.Exit(2)
	}
	if err := run(*bin, *streams, *size, *hold); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(bin string, streams, size int, hold time.Duration) error {
	dir, err := os.MkdirTemp("", "flowdrop-pin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("auth:\n  mode: on\n  api_keys:\n    - {name: probe, sha256: \""+
		policy.HashAPIKey(apiKey)+"\", roles: [invoker]}\nauthz: {default: {allow: [\"*\"]}}\n"), 0o600); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := lis.Addr().String()
	lis.Close()
	cmd := exec.Command(bin, "--listen", addr, "--mcp-listen", "", "--admin-listen", "", "--store", "memory", "--demo", "--policy", pol)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i == 100 {
			return fmt.Errorf("gateway did not listen on %s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := gatewayv1.NewToolGatewayServiceClient(conn)
	authed := func() error {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-api-key", apiKey), 5*time.Second)
		defer cancel()
		args, _ := structpb.NewStruct(map[string]any{"title": "probe"})
		_, err := client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: args})
		return err
	}
	if err := authed(); err != nil {
		return fmt.Errorf("authenticated call before the probes: %w", err)
	}
	pid := cmd.Process.Pid
	fmt.Printf("gateway %s, pid %d: VmRSS %s, VmHWM %s\n", bin, pid, status(pid, "VmRSS"), status(pid, "VmHWM"))
	probes := []struct {
		name, method string
		md           map[string]string
	}{
		{"InvokeTool, no credentials", gatewayv1.ToolGatewayService_InvokeTool_FullMethodName, nil},
		{"InvokeTool, unknown API key", gatewayv1.ToolGatewayService_InvokeTool_FullMethodName, map[string]string{"x-api-key": "fd_wrong"}},
		{"health Check (open to anyone)", healthpb.Health_Check_FullMethodName, nil},
	}
	for _, p := range probes {
		before := status(pid, "VmRSS")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := h2pin.Open(ctx, h2pin.Options{Addr: addr, Method: p.method, Streams: streams, MessageBytes: size, Metadata: p.md})
		if err != nil {
			cancel()
			return err
		}
		time.Sleep(hold)
		held := status(pid, "VmRSS")
		open, ended := 0, map[string]int{}
		for _, s := range c.Streams() {
			switch {
			case !s.Ended:
				open++
			case s.Reset && s.GRPCStatus < 0:
				ended["reset"]++
			default:
				ended[fmt.Sprintf("status %d", s.GRPCStatus)]++
			}
		}
		callErr := authed()
		waitErr := c.WaitEnded(ctx)
		c.Close()
		cancel()
		after := status(pid, "VmRSS")
		fmt.Printf("%s: %d streams × %d bytes, %d bytes sent; after %v: %d open, ended %v; authenticated call meanwhile: %v\n",
			p.name, streams, size, c.Sent(), hold, open, ended, errString(callErr))
		fmt.Printf("  VmRSS before %s, held %s, after the streams ended %s (%s); VmHWM %s\n", before, held, after, errString(waitErr), status(pid, "VmHWM"))
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// status is a field of /proc/PID/status (VmRSS, VmHWM).
func status(pid int, field string) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
