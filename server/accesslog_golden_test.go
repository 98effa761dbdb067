package server_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/loadgen"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/protobuf/types/known/structpb"
)

var updateAccessGolden = flag.Bool("update-access-golden", false, "rewrite testdata/grpc_access_lines.golden")

// teeHandler hands every record to each of hs, so one call's line is seen
// through the JSON and the text handler at once.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool { return t[0].Enabled(ctx, l) }

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range t {
		if err := h.Handle(ctx, r.Clone()); err != nil {
			return err
		}
	}
	return nil
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

var (
	goldenMillis  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	goldenPeer    = regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`)
	goldenRFC3339 = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})$`)
)

// goldenReplace masks what differs between runs (clock readings, ports)
// and only that: a value of the wrong form is kept, marked, so the golden
// comparison fails on it.
func goldenReplace(addrs map[string]string) func([]string, slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		mask := func(re *regexp.Regexp, as string) slog.Attr {
			if a.Value.Kind() == slog.KindString && re.MatchString(a.Value.String()) {
				return slog.String(a.Key, as)
			}
			return slog.String(a.Key, fmt.Sprintf("BAD(%v %v)", a.Value.Kind(), a.Value))
		}
		switch a.Key {
		case slog.TimeKey:
			return slog.String(a.Key, "T")
		case "grpc.start_time", "grpc.request.deadline":
			return mask(goldenRFC3339, strings.ToUpper(strings.TrimPrefix(a.Key, "grpc.")))
		case "grpc.time_ms":
			return mask(goldenMillis, "MS")
		case "peer.address":
			return mask(goldenPeer, "PEER")
		}
		if a.Value.Kind() == slog.KindString {
			s := a.Value.String()
			for addr, name := range addrs {
				s = strings.ReplaceAll(s, addr, name)
			}
			return slog.String(a.Key, s)
		}
		return a
	}
}

// accessGoldenCall is one gRPC call of the golden table.
type accessGoldenCall struct {
	name string // what the call is (the reason of the row)
	do   func(ctx context.Context, env *gatewaytest.Env) error
}

func invokeCall(tool string, args *structpb.Struct, id string) func(context.Context, *gatewaytest.Env) error {
	return func(ctx context.Context, env *gatewaytest.Env) error {
		_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: args, CallId: id})
		return err
	}
}

func listToolsCall(ctx context.Context, env *gatewaytest.Env) error {
	_, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).ListTools(ctx, &gatewayv1.ListToolsRequest{})
	return err
}

// TestGRPCAccessLinesGolden holds the gRPC face's access lines ("finished
// call") to testdata/grpc_access_lines.golden, byte for byte, through both
// of the gateway's handlers (JSON and text) and both OK-call levels: every
// field, its order, its value's type and text. Only clock readings and
// ports are masked (and checked for their form). The table: successful,
// repaired, invalid, unknown, denied, unauthenticated and backend-failed
// calls, with and without a caller identity and a deadline, and a registry
// method. Run with -update-access-golden to rewrite the file.
func TestGRPCAccessLinesGolden(t *testing.T) {
	downAddr := gatewaytest.ClosedAddr(t)
	prod, err := server.LoadPolicyFile(filepath.Join("..", "tools", "bench", "prod-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	schema, err := structpb.NewStruct(loadgen.BenchToolSchema())
	if err != nil {
		t.Fatal(err)
	}
	benchArgs := func(kind string) *structpb.Struct {
		s, err := loadgen.Arguments(kind)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	dropTable := benchArgs(loadgen.PayloadClean)
	dropTable.Fields["title"] = structpb.NewStringValue("DROP TABLE tasks")
	keyed := func(f func(context.Context, *gatewaytest.Env) error) func(context.Context, *gatewaytest.Env) error {
		return func(ctx context.Context, env *gatewaytest.Env) error {
			return f(withKeyCtx(ctx, benchAPIKey), env)
		}
	}
	args := func(m map[string]any) *structpb.Struct { return gatewaytest.Args(t, m) }
	policies := []struct {
		name  string
		opts  func(t *testing.T) []gatewaytest.Option
		calls []accessGoldenCall
	}{
		{"demo-policy", func(*testing.T) []gatewaytest.Option {
			return []gatewaytest.Option{gatewaytest.WithTool(func(string) registry.Tool { return gatewaytest.ObjectTool("down_tool")(downAddr) })}
		}, []accessGoldenCall{
			{"ok, anonymous caller", invokeCall("create_note", args(map[string]any{"title": "t"}), "ok-1")},
			{"ok, no deadline (no grpc.request.deadline)", func(ctx context.Context, env *gatewaytest.Env) error {
				return invokeCall("create_note", args(map[string]any{"title": "t"}), "ok-no-deadline")(context.WithoutCancel(ctx), env)
			}},
			{"ok, arguments repaired", invokeCall("create_note", args(map[string]any{"title": "Ember &amp; Oak"}), "repaired")},
			{"invalid arguments", invokeCall("create_note", args(map[string]any{"tags": "x"}), "invalid")},
			{"unknown tool", invokeCall("no_such_tool", args(map[string]any{}), "unknown")},
			{"backend down", invokeCall("down_tool", args(map[string]any{"a": 1}), "down")},
			{"registry method", listToolsCall},
		}},
		{"prod-policy", func(t *testing.T) []gatewaytest.Option {
			p := prod
			p.Audit.Path = filepath.Join(t.TempDir(), "audit.jsonl")
			return []gatewaytest.Option{gatewaytest.WithPolicy(p),
				gatewaytest.WithTool(func(backend string) registry.Tool {
					return registry.Tool{Name: loadgen.BenchTool, Backend: backend, InputSchema: schema}
				}),
				gatewaytest.WithBackendHandler(loadgen.BenchTool, loadgen.NewBackend().Invoke)}
		}, []accessGoldenCall{
			{"ok, API-key caller", keyed(invokeCall(loadgen.BenchTool, benchArgs(loadgen.PayloadClean), "ok-key"))},
			{"ok, API-key caller, repaired", keyed(invokeCall(loadgen.BenchTool, benchArgs(loadgen.PayloadRepair), "repaired-key"))},
			{"denied by a rule", keyed(invokeCall(loadgen.BenchTool, dropTable, "denied"))},
			{"invalid arguments, API-key caller", keyed(invokeCall(loadgen.BenchTool, args(map[string]any{"title": 1}), "invalid-key"))},
			{"no credential", invokeCall(loadgen.BenchTool, benchArgs(loadgen.PayloadClean), "no-key")},
			{"wrong credential", func(ctx context.Context, env *gatewaytest.Env) error {
				return invokeCall(loadgen.BenchTool, benchArgs(loadgen.PayloadClean), "bad-key")(withKeyCtx(ctx, "not-the-key"), env)
			}},
			{"registry method, API-key caller", keyed(listToolsCall)},
		}},
	}
	modes := []struct {
		name           string
		logLevel, okAt slog.Level
	}{
		{"ok-at-info", slog.LevelInfo, slog.LevelInfo},
		{"ok-at-debug-log-info", slog.LevelInfo, slog.LevelDebug},
		{"ok-at-debug-log-debug", slog.LevelDebug, slog.LevelDebug},
	}
	var got bytes.Buffer
	for _, pc := range policies {
		for _, m := range modes {
			var jsonOut, textOut accessLogBuffer
			hopts := &slog.HandlerOptions{Level: m.logLevel, ReplaceAttr: goldenReplace(map[string]string{downAddr: "DOWN-BACKEND"})}
			logger := slog.New(teeHandler{slog.NewJSONHandler(&jsonOut, hopts), slog.NewTextHandler(&textOut, hopts)})
			env := gatewaytest.Start(t, append(pc.opts(t), gatewaytest.WithConfig(func(c *server.Config) {
				c.Logger, c.OKCallsLevel = logger, m.okAt
			}))...)
			for _, c := range pc.calls {
				jsonAt, textAt := len(jsonOut.String()), len(textOut.String())
				err := c.do(testCtx(t), env)
				fmt.Fprintf(&got, "== %s / %s / %s (error: %v)\n", pc.name, m.name, c.name, err != nil)
				for _, out := range []string{jsonOut.String()[jsonAt:], textOut.String()[textAt:]} {
					for _, l := range strings.SplitAfter(out, "\n") {
						if strings.Contains(l, `"msg":"finished call"`) || strings.Contains(l, `msg="finished call"`) {
							got.WriteString(l)
						}
					}
				}
			}
		}
	}
	golden := filepath.Join("testdata", "grpc_access_lines.golden")
	if *updateAccessGolden {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("access lines differ from %s at line %d:\n got: %s\nwant: %s", golden, i+1, g, w)
			}
		}
	}
}
