package mcpapi

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server/pipeline"
)

var listScaleTools = flag.Int("list-tools", 100_000, "tools BenchmarkToolsListScale lists")

// BenchmarkToolsListScale: MCP tools/list over real HTTP on loopback, paging
// through everything one caller sees in a registry of -list-tools tools
// (100,000), each caller authenticated by its API key and its view decided
// by the policy's allow/deny lists — the callers and tools of gRPC's
// BenchmarkListToolsScale. One op is one page (up to 1,000 tools); the
// client reads the whole answer and finds the cursor without decoding the
// tools, so B/op and allocs/op are the face's and the SDK's framing.
// cpu-ms/op is the process's CPU time a page, which a loaded machine
// stretches far less than ns/op (it includes the client's side).
//
//	go test -run '^$' -bench BenchmarkToolsListScale -benchmem -benchtime 30x ./server/mcpapi/
func BenchmarkToolsListScale(b *testing.B) {
	n := *listScaleTools
	ctx := context.Background()
	store := memstore.New()
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		t := registry.Tool{Name: fmt.Sprintf("team%03d.tool-%06d", i%997, i), Description: "A benchmark tool.", InputSchema: schema,
			Backend: "127.0.0.1:7001", Labels: map[string]string{"team": fmt.Sprintf("team%03d", i%997)}}
		if _, err := store.Put(ctx, t, nil); err != nil {
			b.Fatal(err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := registry.New(store, registry.WithLazyCompile(), registry.WithLogger(quiet))
	if err := reg.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	// The warm-up compiles on all CPUs: done before anything is measured.
	if err := reg.WaitCompiled(ctx); err != nil {
		b.Fatal(err)
	}
	callers := []string{"all", "tenth", "percent", "few"}
	var keys []policy.APIKey
	for _, who := range callers {
		keys = append(keys, policy.APIKey{Name: who, SHA256: policy.HashAPIKey(who + "-key"), Roles: []string{policy.RoleInvoker}})
	}
	auth, err := policy.NewAuthenticator(ctx, policy.AuthConfig{Mode: policy.AuthOn, APIKeys: keys})
	if err != nil {
		b.Fatal(err)
	}
	az, err := policy.NewAuthorizer(policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"all":     {Allow: []string{"*"}},
		"tenth":   {Allow: []string{"*7"}},
		"percent": {Allow: []string{"*77"}, Deny: []string{"team9*"}},
		"few":     {Allow: []string{"team5*.*"}, Deny: []string{"*1", "*3"}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	pipe := pipeline.New(pipeline.Config{Registry: reg, RequireCaller: true, Auth: auth, Authz: az, Log: quiet})
	m, err := New(Config{Pipeline: pipe, Registry: reg, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go m.Serve(lis)
	defer m.Shutdown(ctx)
	url := "http://" + lis.Addr().String() + Path
	client := &http.Client{}

	for _, who := range callers {
		b.Run(who, func(b *testing.B) {
			cursor := ""
			pages, seen := 0, 0
			var body bytes.Buffer
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				params := `{}`
				if cursor != "" {
					params = `{"cursor":"` + cursor + `"}`
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
					strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+params+`}`))
				if err != nil {
					b.Fatal(err)
				}
				req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
					"Mcp-Protocol-Version": {"2025-06-18"}, "X-Api-Key": {who + "-key"}}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body.Reset()
				_, err = body.ReadFrom(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("tools/list: %v, %d %s", err, resp.StatusCode, body.Bytes())
				}
				pages++
				seen += bytes.Count(body.Bytes(), []byte(`"inputSchema":`))
				cursor = ""
				if _, after, ok := bytes.Cut(body.Bytes(), []byte(`"nextCursor":"`)); ok {
					c, _, _ := bytes.Cut(after, []byte(`"`))
					cursor = string(c)
				}
				if cursor == "" {
					if !bytes.Contains(body.Bytes(), []byte(`"tools":`)) {
						b.Fatalf("tools/list answered %s", body.Bytes())
					}
					b.ReportMetric(float64(seen)/float64(pages), "tools/page")
				}
			}
			// CPU time (this process: the face, the SDK and the client) a
			// page: on a shared machine wall time a page stretches with the
			// load, CPU time much less.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
