package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/etcdstore"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/registry/memstore"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// rsGuard bounds every wait so a regression fails instead of hanging.
const rsGuard = 10 * time.Second

// rsGateway is a real gRPC server on 127.0.0.1 serving the registry service
// over a started registry.
type rsGateway struct {
	client gatewayv1.ToolRegistryServiceClient
	reg    *registry.Registry
	svc    *registryService
	gs     *grpc.Server
	conn   *grpc.ClientConn
}

func startRegistryService(t *testing.T, store registry.Store, opts ...registryServiceOption) *rsGateway {
	t.Helper()
	reg := registry.New(store)
	if err := reg.Start(rsCtx(t)); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	svc := registerRegistryService(gs, reg, opts...)
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		svc.Close()
		gs.Stop()
		<-served
		reg.Close()
		store.Close()
	})
	return &rsGateway{client: gatewayv1.NewToolRegistryServiceClient(conn), reg: reg, svc: svc, gs: gs, conn: conn}
}

func rsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), rsGuard)
	t.Cleanup(cancel)
	return ctx
}

func rsSchema(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// boardSchema v1: title (required), tags, count.
func boardSchema(t *testing.T) *structpb.Struct {
	return rsSchema(t, map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title": map[string]any{"type": "string"},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"count": map[string]any{"type": "integer"},
		},
		"required": []any{"title"},
	})
}

func boardTool(t *testing.T, name string) *gatewayv1.Tool {
	return &gatewayv1.Tool{Name: name, Description: "Create a board.", InputSchema: boardSchema(t), Backend: "127.0.0.1:7001"}
}

func int64p(v int64) *int64 { return &v }

func TestRegistryServiceRegisterGetDelete(t *testing.T) {
	t.Parallel()
	g := startRegistryService(t, memstore.New())
	ctx := rsCtx(t)
	in := boardTool(t, "create_board")
	in.Timeout = durationpb.New(1500 * time.Millisecond)
	in.Labels = map[string]string{"team": "boards"}

	created, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: in, ExpectedRevision: int64p(0)})
	if err != nil {
		t.Fatal(err)
	}
	if !created.GetCreated() || created.GetTool().GetRevision() <= 0 {
		t.Fatalf("first registration: created=%v revision=%d; want created with a revision", created.GetCreated(), created.GetTool().GetRevision())
	}
	want := proto.Clone(in).(*gatewayv1.Tool)
	want.Revision = created.GetTool().GetRevision()
	if !proto.Equal(created.GetTool(), want) {
		t.Errorf("registered tool = %v, want %v", created.GetTool(), want)
	}
	if e, ok := g.reg.Lookup("create_board"); !ok || e.Tool.Revision != want.Revision || e.Plan == nil || e.Schema == nil {
		t.Errorf("the snapshot does not serve the compiled tool right after RegisterTool (read-your-writes)")
	}
	got, err := g.client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "create_board"})
	if err != nil || !proto.Equal(got.GetTool(), want) {
		t.Fatalf("GetTool = %v, %v; want %v", got.GetTool(), err, want)
	}

	in.Description = "Create a board, v2."
	updated, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: in, ExpectedRevision: int64p(want.Revision), RequireCompatible: true})
	if err != nil {
		t.Fatal(err)
	}
	if updated.GetCreated() || updated.GetTool().GetRevision() <= want.Revision || len(updated.GetCompatibilityNotes()) != 0 {
		t.Errorf("update: created=%v revision=%d notes=%v; want an update past revision %d with no notes",
			updated.GetCreated(), updated.GetTool().GetRevision(), updated.GetCompatibilityNotes(), want.Revision)
	}

	if _, err := g.client.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "create_board", ExpectedRevision: int64p(updated.GetTool().GetRevision())}); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.reg.Lookup("create_board"); ok {
		t.Error("the snapshot still serves a deleted tool")
	}
	_, err = g.client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "create_board"})
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != `tool "create_board" is not registered` {
		t.Errorf("GetTool after delete = %v; want NotFound naming the tool", err)
	}
}

// badRequestOf returns the status's BadRequest detail, or nil.
func badRequestOf(st *status.Status) *errdetails.BadRequest {
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br
		}
	}
	return nil
}

func wantField(field, descContains string) func(*testing.T, *status.Status) {
	return func(t *testing.T, st *status.Status) {
		t.Helper()
		br := badRequestOf(st)
		if br == nil || len(br.GetFieldViolations()) == 0 {
			t.Fatalf("no BadRequest field violations in %v", st.Details())
		}
		v := br.GetFieldViolations()[0]
		if v.GetField() != field || !strings.Contains(v.GetDescription(), descContains) {
			t.Errorf("violation = {%q, %q}; want field %q, description containing %q", v.GetField(), v.GetDescription(), field, descContains)
		}
	}
}

func TestRegistryServiceErrors(t *testing.T) {
	t.Parallel()
	g := startRegistryService(t, memstore.New())
	ctx := rsCtx(t)
	reg, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: boardTool(t, "create_board")})
	if err != nil {
		t.Fatal(err)
	}
	rev := reg.GetTool().GetRevision()
	withSchema := func(m map[string]any) *gatewayv1.Tool {
		tool := boardTool(t, "other")
		tool.InputSchema = rsSchema(t, m)
		return tool
	}
	register := func(req *gatewayv1.RegisterToolRequest) func() error {
		return func() error { _, err := g.client.RegisterTool(ctx, req); return err }
	}
	// The incompatible update: tags removed, count newly required and narrowed.
	breaking := boardTool(t, "create_board")
	breaking.InputSchema = rsSchema(t, map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title": map[string]any{"type": "string"},
			"count": map[string]any{"type": "string"},
		},
		"required": []any{"title", "count"},
	})

	cases := []struct {
		name   string
		reason string
		call   func() error
		code   codes.Code
		msg    string // substring of the message
		check  func(*testing.T, *status.Status)
	}{
		{name: "no-tool", reason: "a request without a tool names the missing field",
			call: register(&gatewayv1.RegisterToolRequest{}), code: codes.InvalidArgument, msg: "tool is required", check: wantField("tool", "is required")},
		{name: "bad-name", reason: "a name outside the pattern is refused naming tool.name",
			call: register(&gatewayv1.RegisterToolRequest{Tool: boardTool(t, "bad name!")}), code: codes.InvalidArgument, msg: `tool "bad name!": name`, check: wantField("tool.name", registry.NamePattern)},
		{name: "reserved-label-name", reason: "a tool named as the label unregistered names are counted under is refused naming tool.name (its series would merge with theirs)",
			call: register(&gatewayv1.RegisterToolRequest{Tool: boardTool(t, registry.LabelUnregistered)}), code: codes.InvalidArgument, msg: `tool "_unknown": name`, check: wantField("tool.name", "is reserved")},
		{name: "empty-backend", reason: "a tool needs a backend",
			call: register(&gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{Name: "x", InputSchema: boardSchema(t)}}), code: codes.InvalidArgument, msg: "backend", check: wantField("tool.backend", "must not be empty")},
		{name: "bad-backend", reason: "a backend that is not a gRPC dial target is refused with the scheme named",
			call: register(&gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{Name: "x", InputSchema: boardSchema(t), Backend: "http://tools:80"}}), code: codes.InvalidArgument, msg: "backend", check: wantField("tool.backend", `unsupported scheme "http"`)},
		{name: "root-not-object", reason: "the root of the input schema must be an object schema; the pointer names /type",
			call: register(&gatewayv1.RegisterToolRequest{Tool: withSchema(map[string]any{"type": "string"})}), code: codes.InvalidArgument, msg: "root type", check: wantField("tool.input_schema/type", `must be "object"`)},
		{name: "unresolvable-ref", reason: "a $ref that points nowhere is refused naming the reference",
			call: register(&gatewayv1.RegisterToolRequest{Tool: withSchema(map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/missing"}}})}),
			code: codes.InvalidArgument, msg: "#/$defs/missing", check: wantField("tool.input_schema", "unresolvable $ref")},
		{name: "schema-does-not-compile", reason: "an invalid keyword value is refused with the JSON Pointer of the keyword",
			call: register(&gatewayv1.RegisterToolRequest{Tool: withSchema(map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"minLength": "x"}}})}),
			code: codes.InvalidArgument, msg: "minLength", check: wantField("tool.input_schema/properties/x/minLength", "not a valid JSON Schema")},
		{name: "bad-timeout", reason: "a malformed Duration is refused naming tool.timeout",
			call: register(&gatewayv1.RegisterToolRequest{Tool: func() *gatewayv1.Tool {
				tool := boardTool(t, "x")
				tool.Timeout = &durationpb.Duration{Seconds: 1, Nanos: -5}
				return tool
			}()}), code: codes.InvalidArgument, msg: "timeout", check: wantField("tool.timeout", "")},
		{name: "register-revision-mismatch", reason: "a stale expected revision is Aborted naming both revisions, with ErrorInfo",
			call: register(&gatewayv1.RegisterToolRequest{Tool: boardTool(t, "create_board"), ExpectedRevision: int64p(rev + 7)}), code: codes.Aborted,
			msg:   fmt.Sprintf(`tool "create_board": expected revision %d, current revision is %d`, rev+7, rev),
			check: wantRevisionInfo("create_board", rev+7, rev)},
		{name: "register-must-not-exist", reason: "expected revision 0 on an existing tool is a mismatch",
			call: register(&gatewayv1.RegisterToolRequest{Tool: boardTool(t, "create_board"), ExpectedRevision: int64p(0)}), code: codes.Aborted,
			msg: fmt.Sprintf("expected revision 0, current revision is %d", rev), check: wantRevisionInfo("create_board", 0, rev)},
		{name: "negative-expected-revision", reason: "revisions are never negative",
			call: register(&gatewayv1.RegisterToolRequest{Tool: boardTool(t, "create_board"), ExpectedRevision: int64p(-1)}), code: codes.InvalidArgument,
			msg: "expected_revision", check: wantField("expected_revision", "must not be negative")},
		{name: "incompatible", reason: "require_compatible refuses a breaking update with one PreconditionFailure violation per note",
			call: register(&gatewayv1.RegisterToolRequest{Tool: breaking, RequireCompatible: true}), code: codes.FailedPrecondition, msg: "would break existing callers",
			check: func(t *testing.T, st *status.Status) {
				var pf *errdetails.PreconditionFailure
				for _, d := range st.Details() {
					if p, ok := d.(*errdetails.PreconditionFailure); ok {
						pf = p
					}
				}
				var got []string
				for _, v := range pf.GetViolations() {
					got = append(got, v.GetType()+" "+v.GetSubject()+" "+v.GetDescription())
				}
				want := []string{
					"INCOMPATIBLE /properties/count parameter `count` is newly required",
					"INCOMPATIBLE /properties/count/type parameter `count` narrowed from integer to string",
					"INCOMPATIBLE /properties/tags parameter `tags` was removed",
				}
				if !slices.Equal(got, want) {
					t.Errorf("violations = %q, want %q", got, want)
				}
			}},
		{name: "strict-lint", reason: "strict_lint refuses error findings, each a field violation with the JSON Pointer",
			call: register(&gatewayv1.RegisterToolRequest{Tool: withSchema(map[string]any{"type": "object", "properties": map[string]any{"tags": map[string]any{"type": "array"}}}), StrictLint: true}),
			code: codes.InvalidArgument, msg: "fails provider lint",
			check: func(t *testing.T, st *status.Status) {
				var got []string
				for _, v := range badRequestOf(st).GetFieldViolations() {
					got = append(got, v.GetField()+" "+strings.SplitN(v.GetDescription(), ":", 2)[0])
				}
				want := []string{
					"tool.input_schema/properties/tags openai array-items-required",
					"tool.input_schema/properties/tags gemini array-items-required",
				}
				if !slices.Equal(got, want) {
					t.Errorf("violations = %q, want %q (the anthropic warning must not refuse)", got, want)
				}
			}},
		{name: "strict-lint-compile-first", reason: "under strict lint a schema that does not compile is still reported as such",
			call: register(&gatewayv1.RegisterToolRequest{Tool: withSchema(map[string]any{"type": "object", "properties": map[string]any{"tags": map[string]any{"type": "array", "minItems": "x"}}}), StrictLint: true}),
			code: codes.InvalidArgument, msg: "not a valid JSON Schema", check: wantField("tool.input_schema/properties/tags/minItems", "")},
		{name: "get-not-found", reason: "an unknown tool is NotFound naming it",
			call: func() error { _, err := g.client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "nope"}); return err },
			code: codes.NotFound, msg: `tool "nope" is not registered`},
		{name: "get-no-name", reason: "an empty name is bad input, not an unknown tool",
			call: func() error { _, err := g.client.GetTool(ctx, &gatewayv1.GetToolRequest{}); return err },
			code: codes.InvalidArgument, msg: "name is required", check: wantField("name", "is required")},
		{name: "delete-not-found", reason: "deleting an unknown tool is NotFound naming it",
			call: func() error {
				_, err := g.client.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "nope"})
				return err
			},
			code: codes.NotFound, msg: `tool "nope" is not registered`},
		{name: "delete-revision-mismatch", reason: "a conditional delete at a stale revision is Aborted",
			call: func() error {
				_, err := g.client.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "create_board", ExpectedRevision: int64p(rev + 1)})
				return err
			},
			code: codes.Aborted, msg: fmt.Sprintf("expected revision %d, current revision is %d", rev+1, rev), check: wantRevisionInfo("create_board", rev+1, rev)},
		{name: "negative-page-size", reason: "a negative page size is refused",
			call: func() error { _, err := g.client.ListTools(ctx, &gatewayv1.ListToolsRequest{PageSize: -1}); return err },
			code: codes.InvalidArgument, msg: "page_size", check: wantField("page_size", "must not be negative")},
		{name: "bad-page-token", reason: "a token the server did not issue is refused",
			call: func() error {
				_, err := g.client.ListTools(ctx, &gatewayv1.ListToolsRequest{PageToken: "not-a-token!"})
				return err
			},
			code: codes.InvalidArgument, msg: "page_token", check: wantField("page_token", "not a token this server issued")},
		{name: "negative-start-revision", reason: "a negative watch revision is refused",
			call: func() error {
				s, err := g.client.WatchTools(ctx, &gatewayv1.WatchToolsRequest{StartRevision: -2})
				if err != nil {
					return err
				}
				_, err = s.Recv()
				return err
			},
			code: codes.InvalidArgument, msg: "start_revision", check: wantField("start_revision", "must not be negative")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			st := status.Convert(err)
			if st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
				t.Fatalf("got %v: %q; want %v with %q (%s)", st.Code(), st.Message(), tc.code, tc.msg, tc.reason)
			}
			if tc.check != nil {
				tc.check(t, st)
			}
		})
	}
	// None of the refused writes reached the store.
	if got, err := g.client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "create_board"}); err != nil || got.GetTool().GetRevision() != rev {
		t.Errorf("create_board after refused writes = %v, %v; want revision %d unchanged", got.GetTool(), err, rev)
	}
	if _, ok := g.reg.Lookup("other"); ok {
		t.Error("a refused tool is served")
	}
}

func wantRevisionInfo(tool string, expected, current int64) func(*testing.T, *status.Status) {
	return func(t *testing.T, st *status.Status) {
		t.Helper()
		want := &errdetails.ErrorInfo{Reason: ReasonRevisionMismatch, Domain: ErrorDomain, Metadata: map[string]string{
			"tool": tool, "expected_revision": fmt.Sprint(expected), "current_revision": fmt.Sprint(current),
		}}
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && proto.Equal(info, want) {
				return
			}
		}
		t.Errorf("details %v lack %v", st.Details(), want)
	}
}

func TestRegistryServiceCompatibilityNotes(t *testing.T) {
	t.Parallel()
	g := startRegistryService(t, memstore.New())
	ctx := rsCtx(t)
	if _, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: boardTool(t, "b")}); err != nil {
		t.Fatal(err)
	}
	next := boardTool(t, "b")
	next.InputSchema = rsSchema(t, map[string]any{
		"type":       "object",
		"properties": map[string]any{"title": map[string]any{"type": "string"}, "count": map[string]any{"type": "integer"}},
		"required":   []any{"title", "count"},
	})
	// Without require_compatible the update goes through and says what it breaks.
	resp, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: next})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range resp.GetCompatibilityNotes() {
		got = append(got, n.GetPath()+" "+n.GetKind()+" "+n.GetMessage())
	}
	want := []string{
		"/properties/count newly-required parameter `count` is newly required",
		"/properties/tags removed parameter `tags` was removed",
	}
	if !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
	if e, _ := g.reg.Lookup("b"); e == nil || e.Tool.Revision != resp.GetTool().GetRevision() {
		t.Error("the accepted update is not served")
	}
}

func TestRegistryServiceLint(t *testing.T) {
	t.Parallel()
	noItems := func(t *testing.T) *gatewayv1.Tool {
		tool := boardTool(t, "tagger")
		tool.InputSchema = rsSchema(t, map[string]any{"type": "object", "properties": map[string]any{"tags": map[string]any{"type": "array"}}})
		return tool
	}
	cases := []struct {
		name       string
		reason     string
		opts       []registryServiceOption
		req        func(t *testing.T) *gatewayv1.RegisterToolRequest
		refused    bool
		wantFinds  []string // "profile severity path" that must be in the response
		noFindings bool
	}{
		{name: "warnings", reason: "without strict lint, findings (errors included) come back and the tool is registered",
			req: func(t *testing.T) *gatewayv1.RegisterToolRequest {
				return &gatewayv1.RegisterToolRequest{Tool: noItems(t)}
			},
			wantFinds: []string{"openai error /properties/tags", "anthropic warning /properties/tags", "gemini error /properties/tags"}},
		{name: "strict-request", reason: "strict_lint on the request refuses error findings",
			req: func(t *testing.T) *gatewayv1.RegisterToolRequest {
				return &gatewayv1.RegisterToolRequest{Tool: noItems(t), StrictLint: true}
			},
			refused: true},
		{name: "strict-config", reason: "the gateway's strict setting refuses even when the request does not ask",
			opts: []registryServiceOption{WithStrictLint(true)},
			req: func(t *testing.T) *gatewayv1.RegisterToolRequest {
				return &gatewayv1.RegisterToolRequest{Tool: noItems(t)}
			},
			refused: true},
		{name: "strict-warnings-only", reason: "strict lint passes a schema whose only findings are warnings (anthropic alone warns on a missing items)",
			opts: []registryServiceOption{WithStrictLint(true), WithLintProfiles(lint.Anthropic)},
			req: func(t *testing.T) *gatewayv1.RegisterToolRequest {
				return &gatewayv1.RegisterToolRequest{Tool: noItems(t)}
			},
			wantFinds: []string{"anthropic warning /properties/tags"}},
		{name: "strict-clean", reason: "a clean schema passes strict lint with no findings",
			req: func(t *testing.T) *gatewayv1.RegisterToolRequest {
				return &gatewayv1.RegisterToolRequest{Tool: boardTool(t, "create_board"), StrictLint: true}
			},
			noFindings: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := startRegistryService(t, memstore.New(), tc.opts...)
			req := tc.req(t)
			resp, err := g.client.RegisterTool(rsCtx(t), req)
			_, served := g.reg.Lookup(req.GetTool().GetName())
			if tc.refused {
				if st := status.Convert(err); st.Code() != codes.InvalidArgument || badRequestOf(st) == nil || served {
					t.Fatalf("got %v (served=%v); want InvalidArgument with BadRequest and nothing registered (%s)", err, served, tc.reason)
				}
				return
			}
			if err != nil || !served {
				t.Fatalf("RegisterTool = %v (served=%v); want registered (%s)", err, served, tc.reason)
			}
			var got []string
			for _, f := range resp.GetLintFindings() {
				got = append(got, f.GetProfile()+" "+f.GetSeverity()+" "+f.GetPath())
			}
			for _, w := range tc.wantFinds {
				if !slices.Contains(got, w) {
					t.Errorf("findings %q lack %q (%s)", got, w, tc.reason)
				}
			}
			if tc.noFindings && len(got) != 0 {
				t.Errorf("findings = %q, want none (%s)", got, tc.reason)
			}
		})
	}
}

func TestRegistryServiceListTools(t *testing.T) {
	t.Parallel()
	hidden := "boards.secret"
	g := startRegistryService(t, memstore.New(), WithToolFilter(func(_ context.Context, name string) bool { return name != hidden }))
	ctx := rsCtx(t)
	tools := []struct {
		name   string
		labels map[string]string
	}{
		{"boards.create", map[string]string{"team": "boards", "tier": "gold"}},
		{"boards.delete", map[string]string{"team": "boards"}},
		{"boards.list", map[string]string{"team": "boards", "tier": "gold"}},
		{hidden, map[string]string{"team": "boards", "tier": "gold"}},
		{"boards.update", map[string]string{"team": "boards"}},
		{"notes.create", map[string]string{"team": "notes", "tier": "gold"}},
		{"notes.delete", map[string]string{"team": "notes"}},
		{"zeta", nil},
	}
	for _, tt := range tools {
		tool := boardTool(t, tt.name)
		tool.Labels = tt.labels
		if _, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatal(err)
		}
	}
	// pageAll lists with req, following tokens (bounded), and returns the pages' names.
	pageAll := func(t *testing.T, req *gatewayv1.ListToolsRequest) [][]string {
		t.Helper()
		var pages [][]string
		for range 20 {
			resp, err := g.client.ListTools(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range resp.GetTools() {
				names = append(names, tool.GetName())
			}
			pages = append(pages, names)
			if resp.GetNextPageToken() == "" {
				return pages
			}
			req = proto.Clone(req).(*gatewayv1.ListToolsRequest)
			req.PageToken = resp.GetNextPageToken()
		}
		t.Fatal("paging did not end")
		return nil
	}
	cases := []struct {
		name   string
		reason string
		req    *gatewayv1.ListToolsRequest
		want   [][]string
	}{
		{name: "three-pages", reason: "page_size 3 over 7 visible tools is 3 pages in name order; the filter hook hides one",
			req:  &gatewayv1.ListToolsRequest{PageSize: 3},
			want: [][]string{{"boards.create", "boards.delete", "boards.list"}, {"boards.update", "notes.create", "notes.delete"}, {"zeta"}}},
		{name: "exact-fit", reason: "a last page that is exactly full hands out no token for an empty page",
			req:  &gatewayv1.ListToolsRequest{PageSize: 3, NamePrefix: "notes."},
			want: [][]string{{"notes.create", "notes.delete"}}},
		{name: "prefix", reason: "name_prefix keeps only names starting with it",
			req:  &gatewayv1.ListToolsRequest{PageSize: 2, NamePrefix: "boards."},
			want: [][]string{{"boards.create", "boards.delete"}, {"boards.list", "boards.update"}}},
		{name: "labels", reason: "every requested label must match",
			req:  &gatewayv1.ListToolsRequest{Labels: map[string]string{"tier": "gold"}},
			want: [][]string{{"boards.create", "boards.list", "notes.create"}}},
		{name: "prefix-and-labels", reason: "prefix and labels combine",
			req:  &gatewayv1.ListToolsRequest{PageSize: 1, NamePrefix: "boards.", Labels: map[string]string{"team": "boards", "tier": "gold"}},
			want: [][]string{{"boards.create"}, {"boards.list"}}},
		{name: "no-match", reason: "no match is one empty page",
			req:  &gatewayv1.ListToolsRequest{NamePrefix: "x"},
			want: [][]string{nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pageAll(t, tc.req)
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("pages = %q, want %q (%s)", got, tc.want, tc.reason)
			}
		})
	}

	// A tool registered behind the cursor mid-paging is not repeated, and
	// one ahead of it shows up.
	first, err := g.client.ListTools(ctx, &gatewayv1.ListToolsRequest{PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aaa", "notes.archive"} {
		if _, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: boardTool(t, name)}); err != nil {
			t.Fatal(err)
		}
	}
	rest := pageAll(t, &gatewayv1.ListToolsRequest{PageSize: 3, PageToken: first.GetNextPageToken()})
	if want := [][]string{{"boards.update", "notes.archive", "notes.create"}, {"notes.delete", "zeta"}}; !slices.EqualFunc(rest, want, slices.Equal) {
		t.Errorf("pages after concurrent inserts = %q, want %q", rest, want)
	}
}

func TestRegistryServiceListPageSizeBounds(t *testing.T) {
	t.Parallel()
	// The tools go into the store before the registry starts: one load
	// instead of 1001 writes, each deriving a new snapshot, which on a
	// loaded machine took longer than rsGuard. The listing has its own
	// guard.
	store := memstore.New()
	schema := boardSchema(t)
	seed := rsCtx(t)
	for i := range maxListPageSize + 1 {
		if _, err := store.Put(seed, registry.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: schema, Backend: "127.0.0.1:1"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	g := startRegistryService(t, store)
	if n := g.reg.Snapshot().Len(); n != maxListPageSize+1 {
		t.Fatalf("the registry loaded %d tools, want %d", n, maxListPageSize+1)
	}
	ctx := rsCtx(t)
	cases := []struct {
		name   string
		reason string
		size   int32
		want   int
	}{
		{name: "default", reason: "page_size 0 is the default of 100", size: 0, want: defaultListPageSize},
		{name: "clamped", reason: "a page_size over the maximum is clamped to 1000", size: 5000, want: maxListPageSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := g.client.ListTools(ctx, &gatewayv1.ListToolsRequest{PageSize: tc.size})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.GetTools()) != tc.want || resp.GetNextPageToken() == "" {
				t.Errorf("%d tools, token %q; want %d and a token (%s)", len(resp.GetTools()), resp.GetNextPageToken(), tc.want, tc.reason)
			}
		})
	}
}

// event renders a watch event as "TYPE name@revision".
func event(e *gatewayv1.WatchToolsResponse) string {
	return fmt.Sprintf("%s %s@%d", strings.TrimPrefix(e.GetType().String(), "EVENT_TYPE_"), e.GetTool().GetName(), e.GetRevision())
}

func recvN(t *testing.T, s grpc.ServerStreamingClient[gatewayv1.WatchToolsResponse], n int) []string {
	t.Helper()
	var out []string
	for range n {
		e, err := s.Recv()
		if err != nil {
			t.Fatalf("Recv after %q: %v", out, err)
		}
		if e.GetType() == gatewayv1.WatchToolsResponse_EVENT_TYPE_PUT && e.GetTool().GetInputSchema() == nil {
			t.Errorf("PUT %s carries no schema", e.GetTool().GetName())
		}
		out = append(out, event(e))
	}
	return out
}

func TestRegistryServiceWatch(t *testing.T) {
	t.Parallel()
	g := startRegistryService(t, memstore.New())
	ctx := rsCtx(t)
	put := func(name string) int64 {
		resp, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: boardTool(t, name)})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetTool().GetRevision()
	}
	ra, rb := put("a"), put("b")

	// From 0: the current tools, then live changes.
	s0, err := g.client.WatchTools(ctx, &gatewayv1.WatchToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := recvN(t, s0, 2), []string{fmt.Sprintf("PUT a@%d", ra), fmt.Sprintf("PUT b@%d", rb)}; !slices.Equal(got, want) {
		t.Fatalf("initial events = %q, want %q", got, want)
	}
	rc := put("c")
	if _, err := g.client.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	got := recvN(t, s0, 2)
	if want := fmt.Sprintf("PUT c@%d", rc); got[0] != want || !strings.HasPrefix(got[1], "DELETE a@") {
		t.Fatalf("live events = %q, want %q then DELETE a", got, want)
	}

	// From a revision: only what happened after it, history first.
	s1, err := g.client.WatchTools(ctx, &gatewayv1.WatchToolsRequest{StartRevision: rb})
	if err != nil {
		t.Fatal(err)
	}
	if got2 := recvN(t, s1, 2); !slices.Equal(got2, got) {
		t.Errorf("events after revision %d = %q, want %q", rb, got2, got)
	}
}

func TestRegistryServiceWatchCompacted(t *testing.T) {
	t.Parallel()
	g := startRegistryService(t, memstore.New(memstore.WithHistory(1)))
	ctx := rsCtx(t)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: boardTool(t, name)}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := g.client.WatchTools(ctx, &gatewayv1.WatchToolsRequest{StartRevision: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv()
	if st := status.Convert(err); st.Code() != codes.OutOfRange || !strings.Contains(st.Message(), "start_revision 1 ") {
		t.Errorf("watch from a compacted revision = %v; want OutOfRange naming revision 1", err)
	}
}

// TestRegistryServiceWatchEnds checks that a watch stream ends when the
// client cancels, when the service is closed and when the registry closes,
// with no goroutine left behind. GracefulStop waits for every stream, so it
// returning proves the handlers ended. Not parallel: goleak counts every
// goroutine in the process, so no other test may run beside it.
func TestRegistryServiceWatchEnds(t *testing.T) {
	cases := []struct {
		name     string
		reason   string
		end      func(g *rsGateway, cancel context.CancelFunc)
		code     codes.Code
		contains string
	}{
		{name: "client-cancel", reason: "a client that goes away ends the handler", end: func(_ *rsGateway, cancel context.CancelFunc) { cancel() }, code: codes.Canceled},
		{name: "service-close", reason: "a stopping gateway ends the stream with where to resume", end: func(g *rsGateway, _ context.CancelFunc) { g.svc.Close() },
			code: codes.Unavailable, contains: "gateway shutting down; resume watching from revision"},
		{name: "registry-close", reason: "a closed registry ends the stream", end: func(g *rsGateway, _ context.CancelFunc) { g.reg.Close() },
			code: codes.Unavailable, contains: "registry closed; resume watching from revision"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			store := memstore.New()
			g := startRegistryService(t, store)
			if _, err := g.client.RegisterTool(rsCtx(t), &gatewayv1.RegisterToolRequest{Tool: boardTool(t, "a")}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(rsCtx(t))
			defer cancel()
			s, err := g.client.WatchTools(ctx, &gatewayv1.WatchToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			recvN(t, s, 1) // the stream is up and past its initial list
			tc.end(g, cancel)
			_, err = s.Recv()
			if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.contains) {
				t.Errorf("Recv after end = %v; want %v containing %q (%s)", err, tc.code, tc.contains, tc.reason)
			}
			stopped := make(chan struct{})
			go func() { g.gs.GracefulStop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(rsGuard):
				g.gs.Stop()
				t.Fatalf("GracefulStop still waiting after %v: the watch handler did not end (%s)", rsGuard, tc.reason)
			}
			// Release everything now so goleak sees the end state.
			g.conn.Close()
			g.reg.Close()
			store.Close()
		})
	}
}

// TestRegistryServiceStoreUnavailable runs the service over a real etcd that
// then stops: writes fail fast with Unavailable naming the store; reads
// answer from the snapshot.
func TestRegistryServiceStoreUnavailable(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Start(t)
	store, err := etcdstore.New(cluster.Client(t), "/rs", etcdstore.WithTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	g := startRegistryService(t, store)
	ctx := rsCtx(t)
	if _, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: boardTool(t, "a")}); err != nil {
		t.Fatal(err)
	}
	cluster.Stop()
	calls := []struct {
		name   string
		reason string
		call   func() error
	}{
		{name: "register", reason: "a write to an unreachable store", call: func() error {
			_, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: boardTool(t, "b")})
			return err
		}},
		{name: "delete", reason: "a delete on an unreachable store", call: func() error { _, err := g.client.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "a"}); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			st := status.Convert(c.call())
			if st.Code() != codes.Unavailable || st.Message() != storeUnavailable {
				t.Errorf("got %v: %q; want Unavailable %q, without the store's internals (%s)", st.Code(), st.Message(), storeUnavailable, c.reason)
			}
		})
	}
	// The snapshot keeps serving reads while the store is down: ListTools
	// and GetTool alike.
	resp, err := g.client.ListTools(ctx, &gatewayv1.ListToolsRequest{})
	if err != nil || len(resp.GetTools()) != 1 {
		t.Errorf("ListTools with the store down = %v, %v; want the last snapshot", resp.GetTools(), err)
	}
	if got, err := g.client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "a"}); err != nil || got.GetTool().GetName() != "a" {
		t.Errorf("GetTool with the store down = %v, %v; want it answered from the snapshot", got, err)
	}
}

func TestRegistryStatusMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		reason string
		err    error
		code   codes.Code
		msg    string
	}{
		{name: "etcd-unavailable-wrapped", reason: "a wrapped store outage is Unavailable even when caused by a deadline",
			err: fmt.Errorf("%w: get: %w", etcdstore.ErrUnavailable, context.DeadlineExceeded), code: codes.Unavailable,
			msg: storeUnavailable},
		{name: "store-closed", reason: "a closed store is Unavailable", err: fmt.Errorf("memstore: %w", registry.ErrClosed), code: codes.Unavailable,
			msg: storeUnavailable},
		{name: "bare-not-found", reason: "a bare ErrNotFound is NotFound", err: registry.ErrNotFound, code: codes.NotFound, msg: "tool not found"},
		{name: "compacted", reason: "a compacted watch is OutOfRange", err: fmt.Errorf("watch from 3: %w", registry.ErrCompacted), code: codes.OutOfRange,
			msg: "watch from 3: watch revision has been compacted"},
		{name: "not-ours", reason: "other errors fall through to the pipeline cases: Internal, without the cause's text (it may name internals)", err: errors.New("boom"), code: codes.Internal, msg: "internal error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := status.Convert(statusError(tc.err))
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("got %v %q, want %v %q (%s)", st.Code(), st.Message(), tc.code, tc.msg, tc.reason)
			}
		})
	}
}

// TestRegistryServiceRequireCompatibleNarrowings: the nine breaking
// changes issue 33 measured --require-compatible accepting, each refused
// now over the wire with the pointer of the narrowing keyword; the same
// updates without require_compatible go through with that note.
func TestRegistryServiceRequireCompatibleNarrowings(t *testing.T) {
	t.Parallel()
	g := startRegistryService(t, memstore.New())
	ctx := rsCtx(t)
	base := map[string]any{
		"color": map[string]any{"type": "string", "enum": []any{"red", "green", "blue"}},
		"limit": map[string]any{"type": "integer", "minimum": 0, "maximum": 100},
		"title": map[string]any{"type": "string"},
		"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"meta":  map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"type": "string"}}},
	}
	with := func(edit func(props, root map[string]any)) *structpb.Struct {
		props := map[string]any{}
		for k, v := range base {
			props[k] = rsSchemaMapCopy(v)
		}
		root := map[string]any{"type": "object", "properties": props}
		edit(props, root)
		return rsSchema(t, root)
	}
	prop := func(props map[string]any, name string) map[string]any { return props[name].(map[string]any) }
	cases := []struct {
		name, reason string
		edit         func(props, root map[string]any)
		wantPath     string
	}{
		{name: "enum", reason: "an enum value removed refuses it", wantPath: "/properties/color/enum",
			edit: func(p, _ map[string]any) { prop(p, "color")["enum"] = []any{"red", "green"} }},
		{name: "maximum", reason: "a lowered maximum refuses the top of the range", wantPath: "/properties/limit/maximum",
			edit: func(p, _ map[string]any) { prop(p, "limit")["maximum"] = 10 }},
		{name: "minimum", reason: "a raised minimum refuses the bottom of the range", wantPath: "/properties/limit/minimum",
			edit: func(p, _ map[string]any) { prop(p, "limit")["minimum"] = 1 }},
		{name: "maxLength", reason: "a new maxLength refuses longer strings", wantPath: "/properties/title/maxLength",
			edit: func(p, _ map[string]any) { prop(p, "title")["maxLength"] = 8 }},
		{name: "pattern", reason: "a new pattern may refuse strings", wantPath: "/properties/title/pattern",
			edit: func(p, _ map[string]any) { prop(p, "title")["pattern"] = "^[a-z]+$" }},
		{name: "minItems", reason: "a new minItems refuses the empty array", wantPath: "/properties/tags/minItems",
			edit: func(p, _ map[string]any) { prop(p, "tags")["minItems"] = 1 }},
		{name: "root-additionalProperties", reason: "additionalProperties false at the root refuses extra keys", wantPath: "/additionalProperties",
			edit: func(_, r map[string]any) { r["additionalProperties"] = false }},
		{name: "nested-additionalProperties", reason: "additionalProperties false on a nested object", wantPath: "/properties/meta/additionalProperties",
			edit: func(p, _ map[string]any) { prop(p, "meta")["additionalProperties"] = false }},
		{name: "items-type", reason: "items string → integer refuses every non-empty old array", wantPath: "/properties/tags/items/type",
			edit: func(p, _ map[string]any) { prop(p, "tags")["items"] = map[string]any{"type": "integer"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "narrow_" + strings.ReplaceAll(tc.name, "-", "_")
			tool := &gatewayv1.Tool{Name: name, InputSchema: with(func(_, _ map[string]any) {}), Backend: "127.0.0.1:7001"}
			if _, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
				t.Fatal(err)
			}
			next := &gatewayv1.Tool{Name: name, InputSchema: with(tc.edit), Backend: "127.0.0.1:7001"}
			_, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: next, RequireCompatible: true})
			st := status.Convert(err)
			var subjects []string
			for _, d := range st.Details() {
				if pf, ok := d.(*errdetails.PreconditionFailure); ok {
					for _, v := range pf.GetViolations() {
						subjects = append(subjects, v.GetSubject())
					}
				}
			}
			if st.Code() != codes.FailedPrecondition || !slices.Equal(subjects, []string{tc.wantPath}) {
				t.Fatalf("require_compatible update: %v, violations %q; want FailedPrecondition naming %s (%s)", err, subjects, tc.wantPath, tc.reason)
			}
			resp, err := g.client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: next})
			if err != nil {
				t.Fatal(err)
			}
			if n := resp.GetCompatibilityNotes(); len(n) != 1 || n[0].GetPath() != tc.wantPath || n[0].GetKind() != registry.CompatNarrowed {
				t.Errorf("notes without require_compatible: %v; want one narrowed note at %s", n, tc.wantPath)
			}
		})
	}
}

func rsSchemaMapCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = rsSchemaMapCopy(x)
		}
		return m
	case []any:
		return slices.Clone(t)
	}
	return v
}
