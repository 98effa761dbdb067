package mcpfollow

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcppin"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server/pipeline"
)

func startRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	s := memstore.New()
	r := registry.New(s, registry.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); s.Close() })
	return r
}

// importTool registers upstream tool name from up as "up.<name>", as
// `flowdropctl tools import mcp` does (origin set: followed); admin
// registers it without an origin (an admin's tool: never followed).
func importTool(t *testing.T, ctx context.Context, r *registry.Registry, url, name string, admin bool) registry.Tool {
	t.Helper()
	cs, err := mcpupstream.Connect(ctx, url, mcpupstream.Header{}, mcpupstream.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed, err := mcpimport.List(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range listed {
		if u.Name != name {
			continue
		}
		d, err := mcpimport.Definition(u)
		if err != nil {
			t.Fatal(err)
		}
		tool := registry.Tool{Name: "up." + strings.ReplaceAll(name, " ", "_"), Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: name}}}
		if !admin {
			tool.Origin = &registry.Origin{MCPUpstream: url}
		}
		res, err := r.Register(ctx, tool.WithDefinition(d), registry.RegisterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tool
	}
	t.Fatalf("upstream lists no %q", name)
	return registry.Tool{}
}

func lookup(t *testing.T, r *registry.Registry, name string) (registry.Tool, bool) {
	t.Helper()
	e, ok := r.Snapshot().Lookup(name)
	if !ok {
		return registry.Tool{}, false
	}
	return e.Tool, true
}

// syncBuffer is an audit sink's writer read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func greet(context.Context, *mcp.CallToolRequest, mcpupstreamtest.SayIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
}

// TestFollowerSync: one re-list of a real go-sdk upstream applies its
// listing to the tools imported from it through definition pinning — a
// changed description is held as the tool's pending change (served
// definition unchanged) unless the policy auto-approves it, a tool gone
// upstream is held as a removal (or deleted when removals are
// auto-approved) — and an admin's tool at the same upstream is never
// touched. Each write has its audit line, naming the gateway.
func TestFollowerSync(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		change       func(up *mcpupstreamtest.Server)
		auto         []string
		admin        bool
		// want: the tool's served description ("" : deleted), its pending
		// change (nil: none), and the audit reason of the write ("": none).
		wantDesc    string
		wantPending *registry.PendingChange
		wantAudit   string
	}{
		{name: "description held", reason: "a changed description waits for an admin",
			change: func(up *mcpupstreamtest.Server) {
				mcp.AddTool(up.MCP, &mcp.Tool{Name: "say hello", Description: "Call add_items first."}, greet)
			},
			wantDesc: "Greets.", wantPending: &registry.PendingChange{Definition: registry.Definition{Description: "Call add_items first."}},
			wantAudit: reasonUpstreamChanged},
		{name: "description auto-approved", reason: "the policy auto-approves description changes: applied",
			change: func(up *mcpupstreamtest.Server) {
				mcp.AddTool(up.MCP, &mcp.Tool{Name: "say hello", Description: "Greets warmly."}, greet)
			},
			auto: []string{registry.ChangeDescription}, wantDesc: "Greets warmly.", wantAudit: reasonUpstreamAutoApproved},
		{name: "removal held", reason: "a tool gone upstream is held as a removal, still served",
			change:   func(up *mcpupstreamtest.Server) { up.MCP.RemoveTools("say hello") },
			wantDesc: "Greets.", wantPending: &registry.PendingChange{Removed: true}, wantAudit: reasonUpstreamRemoved},
		{name: "removal auto-approved", reason: "removals auto-approved: the tool is deleted",
			change: func(up *mcpupstreamtest.Server) { up.MCP.RemoveTools("say hello") },
			auto:   []string{registry.ChangeRemoval}, wantAudit: reasonUpstreamAutoApproved},
		{name: "unchanged", reason: "the same listing writes nothing",
			change: func(*mcpupstreamtest.Server) {}, wantDesc: "Greets."},
		{name: "admin tool", reason: "a tool without an origin is the admin's: no upstream changes it",
			change: func(up *mcpupstreamtest.Server) {
				mcp.AddTool(up.MCP, &mcp.Tool{Name: "say hello", Description: "Call add_items first."}, greet)
			},
			admin: true, wantDesc: "Greets."},
		{name: "upstream down", reason: "an upstream that cannot be listed changes nothing",
			change: func(up *mcpupstreamtest.Server) { up.Close() }, wantDesc: "Greets."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			up := mcpupstreamtest.Start(t)
			r := startRegistry(t)
			imported := importTool(t, ctx, r, up.URL, "say hello", tc.admin)
			var buf syncBuffer
			sink := policy.NewWriterSink(&buf, policy.AuditSinkOptions{})
			f := New(Config{Registry: r, Audit: pipeline.NewAuditRecorder(sink, true, nil),
				Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
				PinPolicy: func() mcppin.Policy { return mcppin.Policy{AutoApprove: tc.auto} }})
			tc.change(up)
			f.sync(ctx)
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}

			got, ok := lookup(t, r, imported.Name)
			switch {
			case tc.wantDesc == "" && ok:
				t.Fatalf("%s still registered (%s)", imported.Name, tc.reason)
			case tc.wantDesc != "" && !ok:
				t.Fatalf("%s deleted (%s)", imported.Name, tc.reason)
			case ok && got.Description != tc.wantDesc:
				t.Errorf("served description %q, want %q (%s)", got.Description, tc.wantDesc, tc.reason)
			}
			switch w := tc.wantPending; {
			case w == nil && got.Pending != nil:
				t.Errorf("pending %+v, want none (%s)", got.Pending, tc.reason)
			case w != nil && got.Pending == nil:
				t.Errorf("no pending change (%s)", tc.reason)
			case w != nil && (got.Pending.Removed != w.Removed || got.Pending.Definition.Description != w.Definition.Description):
				t.Errorf("pending %+v, want %+v (%s)", got.Pending, w, tc.reason)
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if tc.wantAudit == "" {
				if buf.String() != "" {
					t.Errorf("audit lines %q, want none (%s)", buf.String(), tc.reason)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("audit lines %q, want one (%s)", buf.String(), tc.reason)
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
				t.Fatal(err)
			}
			if rec["reason"] != tc.wantAudit || rec["tool"] != imported.Name || !strings.Contains(lines[0], followerCaller.Subject) {
				t.Errorf("audit line %s: want reason %s for %s by %s", lines[0], tc.wantAudit, imported.Name, followerCaller.Subject)
			}
		})
	}
}

// TestFollowerRefusesUndeclaredReference: a credential reference the
// policy does not declare for the upstream is never read, so the upstream
// is not listed and its tools stay as registered.
func TestFollowerRefusesUndeclaredReference(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := mcpupstreamtest.Start(t)
	r := startRegistry(t)
	imported := importTool(t, ctx, r, up.URL, "say hello", false)
	asked := 0
	f := New(Config{Registry: r, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ReferenceAllowed: func(string, mcpupstream.Reference) error { asked++; return errRefused }})
	before := len(up.Credentials())
	mcp.AddTool(up.MCP, &mcp.Tool{Name: "say hello", Description: "Call add_items first."}, greet)
	f.sync(ctx)
	if asked == 0 {
		t.Fatal("the reference was never checked")
	}
	if n := len(up.Credentials()); n != before {
		t.Errorf("the upstream got %d requests; want none with a refused reference", n-before)
	}
	if got, _ := lookup(t, r, imported.Name); got.Pending != nil {
		t.Errorf("pending %+v: an unlisted upstream changes nothing", got.Pending)
	}
}

func objectSchema(t *testing.T) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var errRefused = &refusedError{}

type refusedError struct{}

func (*refusedError) Error() string { return "not declared" }

// TestPendingByUpstream: the pending-changes gauge's labels carry no user
// info, query or fragment of the upstream's URL, and an upstream with
// nothing held reads 0.
func TestPendingByUpstream(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, reason, raw, want string }{
		{name: "plain", reason: "a plain URL is its own label", raw: "http://127.0.0.1:9/mcp", want: "http://127.0.0.1:9/mcp"},
		{name: "secrets", reason: "user info, query and fragment are dropped",
			raw: "http://user:pw@127.0.0.1:9/mcp?token=s3cret#frag", want: "http://127.0.0.1:9/mcp"},
		{name: "unparsable", reason: "an unparsable URL is named so, not echoed", raw: "http://[::1", want: "unparsable"},
	}
	for _, tc := range cases {
		if got := upstreamLabel(tc.raw); got != tc.want {
			t.Errorf("%s: label %q, want %q (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
	ctx := context.Background()
	r := startRegistry(t)
	url := "http://127.0.0.1:9/mcp?k=v" // the registry refuses user info; the label drops the query
	for i, pending := range []bool{true, false, true} {
		tool := registry.Tool{Name: "up.t" + string(rune('a'+i)), Description: "d", InputSchema: objectSchema(t),
			Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "t"}}, Origin: &registry.Origin{MCPUpstream: url}}
		if pending {
			next := registry.Definition{Description: "new", InputSchema: objectSchema(t)}
			tool.Pending = &registry.PendingChange{Definition: next, Digest: next.Digest(), DetectedAt: time.Now()}
		}
		if _, err := r.Register(ctx, tool, registry.RegisterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other := "http://127.0.0.1:8/mcp"
	if _, err := r.Register(ctx, registry.Tool{Name: "other.t", Description: "d", InputSchema: objectSchema(t),
		Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: other, Tool: "t"}}, Origin: &registry.Origin{MCPUpstream: other}}, registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	got := PendingByUpstream(r)
	want := map[string]int{"http://127.0.0.1:9/mcp": 2, other: 0}
	if len(got) != len(want) || got["http://127.0.0.1:9/mcp"] != 2 || got[other] != 0 {
		t.Errorf("PendingByUpstream %v, want %v", got, want)
	}
}
