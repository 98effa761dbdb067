// Command flowdrop-adversarial measures the gateway's peak resident memory
// under adversarial arguments (BENCHMARKS.md, "Adversarial arguments"): it
// starts a built gateway binary as a subprocess (demo tools, memory store,
// authentication off, on 127.0.0.1), fires rounds of concurrent ~4 MB calls
// — a stringified array of ~2M one-digit elements, and a raw Struct of ~1M
// tiny list elements — and prints the gateway's VmHWM from /proc.
//
//	go build -o /tmp/gw ./cmd/flowdrop-gateway
//	go run ./cmd/flowdrop-adversarial --gateway /tmp/gw
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/server/rawcodec"
)

func main() {
	bin := flag.String("gateway", "", "path of a built flowdrop-gateway binary")
	conc := flag.Int("concurrency", 16, "concurrent calls")
	rounds := flag.Int("rounds", 3, "rounds of concurrent calls per payload")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "--gateway is required")
		os.Exit(2)
	}
	if err := run(*bin, *conc, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func bytesField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// request is an InvokeToolRequest for create_note whose arguments are
// {"title": "t", key: value} with value the given Value bytes.
func request(key string, value []byte) []byte {
	entry := func(k string, v []byte) []byte {
		return bytesField(nil, 1, bytesField(bytesField(nil, 1, []byte(k)), 2, v))
	}
	args := append(entry("title", bytesField(nil, 3, []byte("t"))), entry(key, value)...)
	return bytesField(bytesField(nil, 1, []byte("create_note")), 2, args)
}

func payloads() map[string][]byte {
	const n = 2_000_000 - 8
	stringified := "[" + strings.Repeat("1,", n/2) + "1]" // ~2 MB: the case, doubled elements
	null := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 0)
	item := bytesField(nil, 1, null) // one ListValue element: 4 bytes
	list := make([]byte, 0, 4<<20)
	for len(list)+len(item) < 4<<20-64 {
		list = append(list, item...)
	}
	return map[string][]byte{
		"stringified-array":       request("tags", bytesField(nil, 3, []byte(stringified+strings.Repeat(" ", 2<<20-100)))),
		"struct-of-tiny-elements": request("tags", bytesField(nil, 6, list)),
	}
}

func run(bin string, conc, rounds int) error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := lis.Addr().String()
	lis.Close()
	cmd := exec.Command(bin, "--listen", addr, "--mcp-listen", "", "--admin-listen", "", "--store", "memory")
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
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(8<<20), grpc.MaxCallRecvMsgSize(8<<20)))
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Printf("start: VmHWM %s\n", hwm(cmd.Process.Pid))
	for name, req := range payloads() {
		codes := map[string]int{}
		var mu sync.Mutex
		for range rounds {
			var wg sync.WaitGroup
			for range conc {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					err := conn.Invoke(ctx, gatewayv1.ToolGatewayService_InvokeTool_FullMethodName,
						&rawcodec.Forward{Head: req}, new(rawcodec.Frame), rawcodec.CallOption())
					mu.Lock()
					codes[status.Code(err).String()]++
					mu.Unlock()
				})
			}
			wg.Wait()
		}
		fmt.Printf("%s (%d bytes, %d×%d calls): codes %v; VmHWM %s\n", name, len(req), rounds, conc, codes, hwm(cmd.Process.Pid))
	}
	return nil
}

// hwm is the process's peak resident set size (VmHWM in /proc/PID/status).
func hwm(pid int) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
