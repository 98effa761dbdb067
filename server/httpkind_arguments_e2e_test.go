package server_test

// HTTP-operation arguments stay where the operation puts them: a path
// argument cannot leave its segment (dot segments, empty values), and a
// header argument the HTTP transport would refuse is the caller's
// InvalidArgument, not an unavailable backend. A real net/http service on
// 127.0.0.1 records what reaches it.

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// profileService serves /api/users/{id}/profile and, beside it,
// /api/profile, which no argument of the operation should reach; it
// records each request's escaped path and X-Note header.
type profileService struct {
	mu   sync.Mutex
	reqs []string // "PATH|NOTE"
}

func (s *profileService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/users/{id}/profile", func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id")})
	})
	mux.HandleFunc("GET /api/profile", func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"everyone": true}`))
	})
	// ServeMux answers a path with dot or empty segments with a 301 to its
	// clean form (/api/users/../profile → /api/profile), as many servers
	// do; this records that request too.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			s.record(r)
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *profileService) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r.URL.EscapedPath()+"|"+r.Header.Get("X-Note"))
}

func (s *profileService) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func TestHTTPOperationArgumentsStayInPlace(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	svc := &profileService{}
	lis := gatewaytest.Listen(t)
	hs := &http.Server{Handler: svc.handler()}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(lis) }()
	t.Cleanup(func() { hs.Close(); <-done })

	env := gatewaytest.Start(t, gatewaytest.WithMCP())
	tool := &gatewayv1.Tool{Name: "users.profile", Description: "A user's profile.", InputSchema: gatewaytest.Args(t, map[string]any{"type": "object"}),
		Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_HttpOperation{HttpOperation: &gatewayv1.HttpOperation{
			BaseUrl: "http://" + lis.Addr().String(), Method: "GET", Path: "/api/users/{id}/profile", Parameters: []*gatewayv1.HttpParameter{
				{Name: "id", In: gatewayv1.HttpParameterIn_HTTP_PARAMETER_IN_PATH},
				{Name: "X-Note", In: gatewayv1.HttpParameterIn_HTTP_PARAMETER_IN_HEADER},
			}}}}}
	if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
		t.Fatal(err)
	}
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})

	cases := []struct {
		name, reason string
		args         map[string]any
		wantRefused  string   // in the refusal (InvalidArgument), when refused
		wantNotIn    []string // never in the answer
		wantID       string   // the id the backend read, when it succeeds
		wantReached  string   // the escaped path and note the backend received, when it succeeds
	}{
		{name: "dot-dot", reason: `".." removes the segment before it: /api/users/../profile is /api/profile`,
			args: map[string]any{"id": ".."}, wantRefused: `argument "id" must not be empty, "." or ".."`},
		{name: "dot", reason: `"." is a dot segment: /api/users/./profile is /api/users/profile`,
			args: map[string]any{"id": "."}, wantRefused: `argument "id" must not be empty`},
		{name: "empty", reason: "an empty segment is another path: /api/users//profile",
			args: map[string]any{"id": ""}, wantRefused: `argument "id" must not be empty`},
		{name: "encoded-dot-dot", reason: "a percent-encoded dot segment is escaped again: a user called %2e%2e, in its segment",
			args: map[string]any{"id": "%2e%2e"}, wantID: "%2e%2e", wantReached: "/api/users/%252e%252e/profile|"},
		{name: "dots-and-slashes", reason: "a slash is escaped, so ../.. stays one segment",
			args: map[string]any{"id": "../.."}, wantID: "../..", wantReached: "/api/users/..%2F../profile|"},
		{name: "three-dots", reason: "three dots are a name, not a dot segment",
			args: map[string]any{"id": "..."}, wantID: "...", wantReached: "/api/users/.../profile|"},
		{name: "header-control-character", reason: "a control character in a header argument is the caller's error (InvalidArgument naming the header), not an unavailable backend to retry",
			args: map[string]any{"id": "ann", "X-Note": "tok-4e1f\x01"}, wantRefused: `argument "X-Note" must not hold a line break or other control character`, wantNotIn: []string{"tok-4e1f"}},
		{name: "header-delete", reason: "DEL is a control character too",
			args: map[string]any{"id": "ann", "X-Note": []any{"fine", "tok-9c2a\x7f"}}, wantRefused: `argument "X-Note" must not hold`, wantNotIn: []string{"tok-9c2a"}},
		{name: "header-tab", reason: "a tab is allowed in a header value",
			args: map[string]any{"id": "ann", "X-Note": "a\tb"}, wantID: "ann", wantReached: "/api/users/ann/profile|a\tb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(svc.requests())
			outcomes := callFaces(t, ctx, env, cs, "users.profile", tc.args)
			got := svc.requests()[before:]
			for _, o := range outcomes {
				if tc.wantRefused != "" {
					refused := o.code == codes.InvalidArgument
					if o.face == "mcp" {
						refused = o.code == codes.OK && o.isError
					}
					if !refused || !strings.Contains(o.msg, tc.wantRefused) || !strings.Contains(o.msg, `"users.profile"`) {
						t.Errorf("%s: %+v, want InvalidArgument naming the tool, %q (%s)", o.face, o, tc.wantRefused, tc.reason)
					}
					for _, s := range tc.wantNotIn {
						if strings.Contains(o.msg, s) {
							t.Errorf("%s: the refusal %q quotes the argument's value", o.face, o.msg)
						}
					}
					continue
				}
				var res map[string]any
				if o.code != codes.OK || o.isError || json.Unmarshal([]byte(o.msg), &res) != nil || res["id"] != tc.wantID {
					t.Errorf("%s: %+v, want the profile of %q (%s)", o.face, o, tc.wantID, tc.reason)
				}
			}
			want := []string{} // refused before it is sent
			if tc.wantRefused == "" {
				want = []string{tc.wantReached, tc.wantReached} // one request per face
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("the backend received %q, want %q (%s)", got, want, tc.reason)
			}
		})
	}
}
