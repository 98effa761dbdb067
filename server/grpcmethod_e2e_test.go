package server_test

// gRPC-method tools end to end: a real NotesService (internal/notestest)
// with server reflection on, and a second one without it fronted through a
// descriptor set file, imported with internal/grpcimport (what `flowdropctl
// tools import grpc` runs), registered through ToolRegistryService, and
// called over the gateway's gRPC InvokeTool and MCP tools/call.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// importNotes imports every unary NotesService method of src as tools
// named prefix+"NotesService.<Method>" and registers them on env.
func importNotes(t *testing.T, ctx context.Context, env *gatewaytest.Env, src *grpcimport.Source, target, prefix string) {
	t.Helper()
	tools, skipped, err := grpcimport.Tools(src, grpcimport.Options{Target: target, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || skipped[0].Method != "/flowdrop.testing.v1.NotesService/WatchNotes" {
		t.Errorf("skipped %v, want only the streaming WatchNotes", skipped)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, tool := range tools {
		if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tool.GetName(), err)
		}
	}
}

func reflectionSource(t *testing.T, ctx context.Context, addr string) (*grpcimport.Source, error) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	return grpcimport.FromReflection(ctx, cc)
}

func TestGRPCMethodTools(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	withReflection, withoutReflection := notestest.Start(t, true), notestest.Start(t, false)

	p := server.DemoPolicy()
	p.Rules = append(p.Rules, policy.Rule{Name: "no-secret-notes",
		Tools: []string{"refl.NotesService.CreateNote", "file.NotesService.CreateNote"}, Expr: `!args.title.contains("secret")`})
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))

	src, err := reflectionSource(t, ctx, withReflection.Addr)
	if err != nil {
		t.Fatal(err)
	}
	importNotes(t, ctx, env, src, withReflection.Addr, "refl.")
	if _, err := reflectionSource(t, ctx, withoutReflection.Addr); err == nil || !strings.Contains(err.Error(), "--protoset") {
		t.Fatalf("reflection from the server without it: %v, want a refusal pointing at --protoset", err)
	}
	setFile := filepath.Join(t.TempDir(), "notes.binpb")
	if err := os.WriteFile(setFile, notestest.DescriptorSet(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(setFile)
	if err != nil {
		t.Fatal(err)
	}
	fileSrc, err := grpcimport.FromDescriptorSet(b)
	if err != nil {
		t.Fatal(err)
	}
	importNotes(t, ctx, env, fileSrc, withoutReflection.Addr, "file.")

	// Imported: now the reflecting server stops reflecting; the stored
	// descriptors carry the calls.
	withReflection.SetReflection(false)
	if _, err := reflectionSource(t, ctx, withReflection.Addr); err == nil {
		t.Fatal("reflection still answers after SetReflection(false)")
	}

	// A service that is gone: Unavailable naming the tool, not the target.
	closed := gatewaytest.ClosedAddr(t)
	importNotes(t, ctx, env, fileSrc, closed, "gone.")
	_, err = env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "gone.NotesService.Ping", Arguments: gatewaytest.Args(t, map[string]any{})})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "gone.NotesService.Ping") || strings.Contains(st.Message(), closed) {
		t.Errorf("a gone service: %v, want Unavailable naming the tool and not %s", err, closed)
	}

	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	faces := []struct {
		name string
		call func(tool string, args map[string]any) (result map[string]any, code codes.Code, msg string)
	}{
		{"grpc", func(tool string, args map[string]any) (map[string]any, codes.Code, string) {
			resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, args)})
			if err != nil {
				st := status.Convert(err)
				return nil, st.Code(), st.Message()
			}
			return resp.GetResult().GetStructValue().AsMap(), codes.OK, ""
		}},
		{"mcp", func(tool string, args map[string]any) (map[string]any, codes.Code, string) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				return nil, codes.Unknown, err.Error()
			}
			if res.IsError {
				return nil, codes.Unknown, resultText(res)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(resultText(res)), &m); err != nil {
				t.Fatalf("MCP result %q: %v", resultText(res), err)
			}
			return m, codes.OK, ""
		}},
	}
	backends := []struct {
		prefix string
		notes  *notestest.Server
	}{{"refl.", withReflection}, {"file.", withoutReflection}}

	for _, face := range faces {
		for _, be := range backends {
			t.Run(face.name+"/"+strings.TrimSuffix(be.prefix, "."), func(t *testing.T) {
				create := be.prefix + "NotesService.CreateNote"
				// Repairs, exact int64, enum by name: one call, checked where it arrives.
				got, code, msg := face.call(create, map[string]any{
					"title":    "groceries",
					"tags":     `["milk", "eggs"]`, // a stringified array: RT-TOOL-8 repairs it
					"authorId": "9007199254740993", // 2^53+1: exact only as a string
					"priority": "PRIORITY_HIGH",
				})
				if code != codes.OK {
					t.Fatalf("CreateNote: %v %s", code, msg)
				}
				sent := be.notes.Service.Created()
				want := &testingv1.CreateNoteRequest{Title: "groceries", Tags: []string{"milk", "eggs"},
					AuthorId: 9007199254740993, Priority: testingv1.Priority_PRIORITY_HIGH}
				if last := sent[len(sent)-1]; !proto.Equal(last, want) {
					t.Errorf("the service received %v, want %v (a repaired list, the exact int64, the enum by name)", last, want)
				}
				note, _ := got["note"].(map[string]any)
				if note["authorId"] != "9007199254740993" || note["priority"] != "PRIORITY_HIGH" {
					t.Errorf("result %v: want the response's JSON form, int64 as an exact string and the enum by name", got)
				}

				cases := []struct {
					name, reason, tool string
					args               map[string]any
					wantCode           codes.Code // gRPC face; MCP: an error result
					wantIn             []string
					wantNotIn          []string
				}{
					{name: "unknown-field", reason: "the request message has no such field: refused before the backend, naming it",
						tool: create, args: map[string]any{"title": "t", "colour": "red"},
						wantCode: codes.InvalidArgument, wantIn: []string{"colour"}},
					{name: "rule", reason: "policy applies to imported tools: the CEL rule refuses the call",
						tool: create, args: map[string]any{"title": "my secret plan"},
						wantCode: codes.PermissionDenied, wantIn: []string{"no-secret-notes"}},
					{name: "backend-status", reason: "the service's own status (code and message) is passed on, naming no address",
						tool: be.prefix + "NotesService.GetNote", args: map[string]any{"id": "nope"},
						wantCode: codes.NotFound, wantIn: []string{`no note "nope"`}, wantNotIn: []string{be.notes.Addr}},
				}
				for _, tc := range cases {
					_, code, msg := face.call(tc.tool, tc.args)
					if code == codes.OK {
						t.Errorf("%s: succeeded, want a refusal (%s)", tc.name, tc.reason)
						continue
					}
					if face.name == "grpc" && code != tc.wantCode {
						t.Errorf("%s: code %v (%s), want %v (%s)", tc.name, code, msg, tc.wantCode, tc.reason)
					}
					for _, s := range tc.wantIn {
						if !strings.Contains(msg, s) {
							t.Errorf("%s: message %q does not contain %q (%s)", tc.name, msg, s, tc.reason)
						}
					}
					for _, s := range tc.wantNotIn {
						if strings.Contains(msg, s) {
							t.Errorf("%s: message %q contains %q (%s)", tc.name, msg, s, tc.reason)
						}
					}
				}
			})
		}
	}
}
