package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

const upURL = "http://127.0.0.1:9/mcp"

func importedTool(t *testing.T, description, props string) registry.Tool {
	return registry.Tool{Name: "up.t", Description: description, InputSchema: schema(t, `{"type":"object","properties":`+props+`}`),
		Spec:   &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: upURL, Tool: "t"}},
		Origin: &registry.Origin{MCPUpstream: upURL}}
}

// TestImportedToolOrigin: an import's origin gets the digest of what was
// imported; an admin's later edit without an origin keeps the stored
// origin and its held change, and pins the definition (Edited); an edit
// that stops calling the upstream drops them; an origin must name the
// tool's own upstream.
func TestImportedToolOrigin(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	r := start(t, s)

	in := importedTool(t, "Greets.", `{"name":{"type":"string"}}`)
	res, err := r.Register(ctx, in, registry.RegisterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Tool.Origin; o == nil || o.UpstreamDigest != in.Definition().Digest() || res.Tool.Edited() {
		t.Fatalf("imported origin %+v (edited %v): want the imported definition's digest, not edited", o, res.Tool.Edited())
	}
	held := res.Tool
	next := importedTool(t, "Call fetch first.", `{"name":{"type":"string"}}`).Definition()
	held.Pending = &registry.PendingChange{Definition: next, Digest: next.Digest(), DetectedAt: time.Now()}
	rev := held.Revision
	if res, err = r.Register(ctx, held, registry.RegisterOptions{ExpectedRevision: &rev}); err != nil {
		t.Fatal(err)
	}

	edit := importedTool(t, "Greets a known person.", `{"name":{"type":"string","enum":["alice"]}}`)
	edit.Origin = nil // a tools file carries none
	res, err = r.Register(ctx, edit, registry.RegisterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Tool
	if got.Origin == nil || got.Origin.MCPUpstream != upURL || got.Pending == nil || got.Pending.Digest != next.Digest() || !got.Edited() {
		t.Errorf("after the admin's edit: origin %+v pending %+v edited %v; want the origin and the held change kept, edited", got.Origin, got.Pending, got.Edited())
	}

	grpc := registry.Tool{Name: "up.t", Backend: "127.0.0.1:7001", InputSchema: edit.InputSchema}
	if res, err = r.Register(ctx, grpc, registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	if res.Tool.Origin != nil || res.Tool.Pending != nil {
		t.Errorf("a tool that no longer calls the upstream kept origin %+v pending %+v; want neither (it is the admin's now)", res.Tool.Origin, res.Tool.Pending)
	}

	for _, tc := range []struct {
		name, reason, field string
		tool                registry.Tool
	}{
		{"other-url", "an origin names the tool's own upstream", "origin.mcp_upstream",
			func() registry.Tool {
				x := importedTool(t, "", `{}`)
				x.Origin.MCPUpstream = "http://127.0.0.1:8/mcp"
				return x
			}()},
		{"not-mcp", "only an upstream MCP tool is imported from one", "origin.mcp_upstream",
			registry.Tool{Name: "x", Backend: "127.0.0.1:1", InputSchema: edit.InputSchema, Origin: &registry.Origin{MCPUpstream: upURL}}},
		{"bad-digest", "a digest is hex SHA-256", "origin.upstream_digest",
			func() registry.Tool { x := importedTool(t, "", `{}`); x.Origin.UpstreamDigest = "zz"; return x }()},
		{"pending-without-origin", "only an imported tool has a pending change", "pending",
			registry.Tool{Name: "x", Backend: "127.0.0.1:1", InputSchema: edit.InputSchema, Pending: &registry.PendingChange{Removed: true}}},
	} {
		_, err := r.Register(ctx, tc.tool, registry.RegisterOptions{})
		var te *registry.ToolError
		if !errors.As(err, &te) || te.Field != tc.field {
			t.Errorf("%s: %v; want a ToolError on %s (%s)", tc.name, err, tc.field, tc.reason)
		}
	}
}

// TestApproveRejectPending: approval serves the held definition (or
// deletes the tool for a removal), rejection keeps the served one and
// records the upstream's as seen; both are pinned to the revision given
// and refuse a tool with nothing pending.
func TestApproveRejectPending(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	r := start(t, s)
	hold := func(name string, p registry.PendingChange) registry.Tool {
		t.Helper()
		tool := importedTool(t, "Greets.", `{"name":{"type":"string"}}`)
		tool.Name = name
		if _, err := r.Register(ctx, tool, registry.RegisterOptions{}); err != nil {
			t.Fatal(err)
		}
		cur, _ := r.Get(ctx, name)
		cur.Pending = &p
		res, err := r.Register(ctx, cur, registry.RegisterOptions{ExpectedRevision: &cur.Revision})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tool
	}
	next := importedTool(t, "Greets, politely.", `{"name":{"type":"string"},"title":{"type":"string"}}`).Definition()
	change := registry.PendingChange{Definition: next, Digest: next.Digest(), DetectedAt: time.Now()}

	a := hold("up.a", change)
	stale := a.Revision - 1
	if _, _, err := r.ApprovePending(ctx, "up.a", &stale, registry.RegisterOptions{}); !errors.As(err, new(*registry.RevisionMismatchError)) {
		t.Errorf("approve at a stale revision: %v; want a revision mismatch", err)
	}
	res, deleted, err := r.ApprovePending(ctx, "up.a", &a.Revision, registry.RegisterOptions{})
	if err != nil || deleted {
		t.Fatalf("approve: %v (deleted %v)", err, deleted)
	}
	if !res.Tool.Definition().Equal(next) || res.Tool.Pending != nil || res.Tool.Edited() {
		t.Errorf("approved tool %+v: want the held definition served, nothing pending, not edited", res.Tool)
	}
	if e, _ := r.Lookup("up.a"); e == nil || e.Tool.Description != "Greets, politely." {
		t.Errorf("the snapshot serves %+v after approval; want the new definition at once", e)
	}
	if _, _, err := r.ApprovePending(ctx, "up.a", nil, registry.RegisterOptions{}); !errors.As(err, new(*registry.NoPendingChangeError)) {
		t.Errorf("approve with nothing pending: %v; want NoPendingChangeError", err)
	}

	b := hold("up.b", change)
	rejected, err := r.RejectPending(ctx, "up.b", &b.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if rejected.Description != "Greets." || rejected.Pending != nil || rejected.Origin.UpstreamDigest != next.Digest() || !rejected.Edited() {
		t.Errorf("rejected tool %+v origin %+v: want its definition kept, the upstream's digest recorded, edited", rejected, rejected.Origin)
	}

	hold("up.c", registry.PendingChange{Removed: true, Digest: registry.DigestRemoved})
	if _, deleted, err := r.ApprovePending(ctx, "up.c", nil, registry.RegisterOptions{}); err != nil || !deleted {
		t.Errorf("approve a removal: %v (deleted %v); want the tool deleted", err, deleted)
	}
	if _, err := r.Get(ctx, "up.c"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("up.c after its removal was approved: %v; want not found", err)
	}
	if _, err := r.RejectPending(ctx, "nope", nil); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("reject an unknown tool: %v; want not found", err)
	}
	if err := (&registry.NoPendingChangeError{Tool: "up.a"}).Error(); !strings.Contains(err, "up.a") {
		t.Errorf("NoPendingChangeError %q does not name the tool", err)
	}
}
