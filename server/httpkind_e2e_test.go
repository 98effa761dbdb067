package server_test

// HTTP-operation tools end to end: a real net/http service on 127.0.0.1
// described by an OpenAPI 3 document (testdata/petstore.openapi.yaml),
// imported with internal/openapiimport (what `flowdropctl tools import
// openapi` runs), registered through ToolRegistryService and called over
// the gateway's gRPC InvokeTool and MCP tools/call.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/openapiimport"
)

// petService is the HTTP API of testdata/petstore.openapi.yaml; it records
// each request as it arrived.
type petService struct {
	mu   sync.Mutex
	last map[string]any
}

func (s *petService) record(r *http.Request, body any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = map[string]any{"method": r.Method, "path": r.URL.EscapedPath(), "query": strings.Join(r.URL.Query()["tag"], ","), "body": body,
		"note": r.Header.Get("X-Trace-Note"), "caller": r.Header.Get("X-Flowdrop-Caller")}
}

func (s *petService) lastRequest() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *petService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pets/{petId}", func(w http.ResponseWriter, r *http.Request) {
		s.record(r, nil)
		if r.PathValue("petId") == "missing" {
			http.Error(w, "no pet called missing", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("petId"), "tags": r.URL.Query()["tag"]})
	})
	mux.HandleFunc("POST /pets", func(w http.ResponseWriter, r *http.Request) {
		var body any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, "body is not JSON", http.StatusBadRequest)
			return
		}
		s.record(r, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"created": body})
	})
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database at 10.0.0.7 is down", http.StatusInternalServerError)
	})
	return mux
}

// startPetService serves the pet API on 127.0.0.1 until the test ends.
func startPetService(t *testing.T) (*petService, string) {
	t.Helper()
	svc := &petService{}
	lis := gatewaytest.Listen(t)
	hs := &http.Server{Handler: svc.handler()}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(lis) }()
	t.Cleanup(func() { hs.Close(); <-done })
	return svc, "http://" + lis.Addr().String()
}

// importPets imports the pet API at baseURL, tool names prefixed, and
// registers the tools on env.
func importPets(t *testing.T, ctx context.Context, env *gatewaytest.Env, baseURL, prefix string) {
	t.Helper()
	importPetsTB(t, ctx, env, baseURL, prefix)
}

func importPetsTB(t testing.TB, ctx context.Context, env *gatewaytest.Env, baseURL, prefix string) {
	t.Helper()
	data, err := os.ReadFile("testdata/petstore.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapiimport.Load(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	tools, skipped, err := openapiimport.Tools(doc, openapiimport.Options{BaseURL: baseURL, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || skipped[0].Operation != "upload" || !strings.Contains(skipped[0].Reason, "not JSON") {
		t.Errorf("skipped %v, want only upload (its body is not JSON)", skipped)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, tool := range tools {
		if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tool.GetName(), err)
		}
	}
}

func TestHTTPOperationTools(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pets, baseURL := startPetService(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP())
	importPets(t, ctx, env, baseURL, "pets.")
	closed := "http://" + gatewaytest.ClosedAddr(t)
	importPets(t, ctx, env, closed, "gone.")
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})

	type answer struct {
		result  any
		isError bool
		code    codes.Code
		msg     string
	}
	faces := []struct {
		name string
		call func(tool string, args map[string]any) answer
	}{
		{"grpc", func(tool string, args map[string]any) answer {
			resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, args)})
			if err != nil {
				st := status.Convert(err)
				return answer{code: st.Code(), msg: st.Message()}
			}
			r := resp.GetResult().AsInterface()
			s, _ := r.(string)
			return answer{result: r, isError: resp.GetIsError(), msg: s}
		}},
		{"mcp", func(tool string, args map[string]any) answer {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				return answer{code: codes.Unknown, msg: err.Error()}
			}
			text := resultText(res)
			var v any
			if json.Unmarshal([]byte(text), &v) != nil {
				v = text
			}
			return answer{result: v, isError: res.IsError, msg: text}
		}},
	}
	for _, face := range faces {
		t.Run(face.name, func(t *testing.T) {
			// Path (escaped), query (an array repeats the key), a declared header.
			a := face.call("pets.getPet", map[string]any{"petId": "rex/1 b", "tag": []any{"good", "old"}, "X-Trace-Note": "hello"})
			if a.code != codes.OK || a.isError {
				t.Fatalf("getPet: %+v", a)
			}
			got := pets.lastRequest()
			if got["path"] != "/pets/rex%2F1%20b" || got["query"] != "good,old" || got["note"] != "hello" {
				t.Errorf("the service received %v, want the path argument escaped into one segment, tag twice, the header", got)
			}
			if got["caller"] == "" {
				t.Errorf("the service received no X-Flowdrop-Caller: %v", got)
			}
			if m, _ := a.result.(map[string]any); m["id"] != "rex/1 b" {
				t.Errorf("getPet result %v, want the service's JSON", a.result)
			}

			// Body: the body properties as one object; a stringified array
			// repaired by RT-TOOL-8 arrives as a JSON array.
			a = face.call("pets.createPet", map[string]any{"name": "Rex", "tags": `["good", "old"]`})
			if a.code != codes.OK || a.isError {
				t.Fatalf("createPet: %+v", a)
			}
			body, _ := pets.lastRequest()["body"].(map[string]any)
			if tags, ok := body["tags"].([]any); !ok || len(tags) != 2 || tags[0] != "good" || body["name"] != "Rex" {
				t.Errorf("the service received body %v, want {name: Rex, tags: [good, old]} (tags repaired into an array)", body)
			}

			cases := []struct {
				name, reason, tool string
				args               map[string]any
				wantToolError      bool       // a result with is_error/isError
				wantCode           codes.Code // gRPC face, when not a tool error
				wantIn, wantNotIn  []string
			}{
				{name: "4xx", reason: "a client error is the tool's error: status and the body's prefix, for the model to read",
					tool: "pets.getPet", args: map[string]any{"petId": "missing"},
					wantToolError: true, wantIn: []string{"HTTP 404", "no pet called missing"}},
				{name: "5xx", reason: "a server error is Unavailable naming the tool; neither the URL nor the body passes on",
					tool: "pets.broken", args: map[string]any{},
					wantCode: codes.Unavailable, wantIn: []string{"pets.broken"}, wantNotIn: []string{baseURL, "10.0.0.7"}},
				{name: "refused", reason: "connection refused is Unavailable naming the tool, not the URL",
					tool: "gone.getPet", args: map[string]any{"petId": "rex"},
					wantCode: codes.Unavailable, wantIn: []string{"gone.getPet"}, wantNotIn: []string{closed}},
				{name: "schema", reason: "the imported schema refuses an undeclared argument before the backend",
					tool: "pets.createPet", args: map[string]any{"name": "Rex", "colour": "red"},
					wantCode: codes.InvalidArgument, wantIn: []string{"colour"}},
			}
			for _, tc := range cases {
				a := face.call(tc.tool, tc.args)
				switch {
				case tc.wantToolError && !a.isError:
					t.Errorf("%s: %+v, want a tool error (%s)", tc.name, a, tc.reason)
				case !tc.wantToolError && a.code == codes.OK && !a.isError:
					t.Errorf("%s: succeeded, want a refusal (%s)", tc.name, tc.reason)
				case !tc.wantToolError && face.name == "grpc" && a.code != tc.wantCode:
					t.Errorf("%s: code %v (%s), want %v (%s)", tc.name, a.code, a.msg, tc.wantCode, tc.reason)
				}
				for _, s := range tc.wantIn {
					if !strings.Contains(a.msg, s) {
						t.Errorf("%s: message %q does not contain %q (%s)", tc.name, a.msg, s, tc.reason)
					}
				}
				for _, s := range tc.wantNotIn {
					if strings.Contains(a.msg, s) {
						t.Errorf("%s: message %q contains %q (%s)", tc.name, a.msg, s, tc.reason)
					}
				}
			}
		})
	}
}
