package mcpapi

// tools/list, answered by the face.
//
// Why: the go-sdk's server lists its own tool set — every tool, 1,000 to a
// page — and re-sorts that set on every AddTool. The face filtered each
// page per caller afterwards, so a caller who sees few tools of a large
// registry got sparse or empty pages, and each registry change cost the
// SDK a sort of the whole set (unusable at 100,000 tools). Now:
//
//   - a page walks the registry snapshot in place from the cursor, in name
//     order, keeping what the caller may see (the policy's authorizer, as
//     gRPC ListTools asks it: ToolAllowed, no refusal built) and, on a
//     bundle's endpoint, what the bundle selects; it stops at listPageSize
//     visible tools. Pages are full whatever the caller sees, and a page
//     costs what it scans, not a copy of the registry.
//   - the cursor is the last name listed (bounded, opaque to the caller:
//     base64). Names are sorted, so paging while the registry changes lists
//     every tool present throughout exactly once, and a tool added or
//     removed ahead of the cursor is or is not listed accordingly.
//   - each tool's MCP definition (mcpTool) is made once per registry entry
//     and shared by every listing (toolDefs).
//   - the result is the SDK's own ListToolsResult with the SDK's caching
//     hints (listCacheable), returned from the receiving middleware, so the
//     SDK frames it per revision exactly as it framed its own listing
//     (TestMCPToolsListMatchesSDK holds the two equal).
//
// The SDK's server keeps only what it still needs of tools: those whose
// input schema may carry x-mcp-header annotations, whose Mcp-Param-*
// headers its transport checks on a 2026-07-28 tools/call (it looks the
// tool up by name), and one placeholder (listChangedTool) re-added after
// every change of the tool set, which is what makes it send
// notifications/tools/list_changed. Config.SDKOnly keeps the former way
// (every tool in the SDK, its listing filtered): the reference the
// differential test compares against.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// listPageSize bounds a tools/list page: the SDK's page size, so a caller
// gets as many tools a page as before, now all of them visible to it.
const listPageSize = mcp.DefaultPageSize

// listChangedTool is the placeholder the SDK's tool set holds so that
// re-adding it announces a change of the tool set. Longer than any registry
// name (registry.NamePattern: at most 64), so no tool can take it; valid
// for the SDK (at most 128 of its characters).
const listChangedTool = "flowdrop-internal.tools-list-changed.not-a-tool-no-registry-name-is-this-long"

// listCursorPrefix versions the cursor's text.
const listCursorPrefix = "l1:"

// maxListCursorLen bounds a cursor: one tool name's (registry.NamePattern).
var maxListCursorLen = base64.RawURLEncoding.EncodedLen(len(listCursorPrefix) + 64)

func encodeListCursor(lastName string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(listCursorPrefix + lastName))
}

// errListCursor answers a cursor this server did not issue: invalid params,
// as the SDK answered one it could not decode (HTTP 400 from 2026-07-28).
var errListCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
	Message: "tools/list: the cursor is not one this server issued; list again without one"}

// decodeListCursor is the name a cursor continues after ("" for none).
func decodeListCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	if len(cursor) > maxListCursorLen {
		return "", errListCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	name, ok := strings.CutPrefix(string(raw), listCursorPrefix)
	if err != nil || !ok || !registry.ValidName(name) {
		return "", errListCursor
	}
	return name, nil
}

// listCacheable sets a tools/list result's caching hints: per caller
// (filtered) and live (the registry changes). The SDK's SetCacheable hook
// for its own listing and the face's listing both use it.
func listCacheable(c *mcp.Cacheable) {
	c.TTLMs, c.CacheScope = 0, "private"
}

// toolDefs are the MCP definitions of registry entries, made once per
// entry (an entry is immutable once published: a change publishes a new
// one) and shared by every listing. A nil definition: the tool is not
// offered over MCP (mcpTool failed; sync logged why).
type toolDefs struct {
	m sync.Map // *registry.Entry → *mcp.Tool
}

// of is e's definition. One sync has not reached yet is made now and not
// kept: only sync stores, so only sync must forget (an entry published and
// replaced between two syncs is never seen by either).
func (d *toolDefs) of(e *registry.Entry) *mcp.Tool {
	if v, ok := d.m.Load(e); ok {
		return v.(*mcp.Tool)
	}
	if t, err := mcpTool(e); err == nil {
		return t
	}
	return nil
}

func (d *toolDefs) forget(e *registry.Entry) { d.m.Delete(e) }

// listTools is tools/list for the request in ctx: one page of the caller's
// view (module comment).
func (m *Server) listTools(ctx context.Context, req *mcp.ListToolsRequest) (mcp.Result, error) {
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	after, err := decodeListCursor(cursor)
	if err != nil {
		return nil, err
	}
	lr := &mcp.ListToolsResult{}
	listCacheable(&lr.Cacheable)
	if m.viewFor(ctx).Discovery {
		lr.Tools = m.metaTools(ctx)
		return lr, nil
	}
	rev := requestRevision(req)
	usable := tasksUsable(rev, requestMeta(req))
	snap := m.reg.Snapshot()
	shows := m.listFilter(ctx, snap)
	lr.Tools = []*mcp.Tool{}
	var entries []*registry.Entry
	for e := range snap.Since(after) {
		if e.Tool.Name == after || !shows(&e.Tool) {
			continue
		}
		t := m.defs.of(e)
		if t == nil || m.taskHidden(ctx, usable, e) {
			continue
		}
		if len(lr.Tools) == listPageSize {
			// One more exists: hand out a cursor for it.
			lr.NextCursor = encodeListCursor(lr.Tools[listPageSize-1].Name)
			break
		}
		lr.Tools = append(lr.Tools, t)
		entries = append(entries, e)
	}
	return m.withExecution(ctx, rev, lr, entries), nil
}

// listFilter is pipeline.Visible for one listing of snap: the caller's
// role for tools/call and its allow/deny lists (policy.Authorizer's
// ToolAllowed, as gRPC ListTools asks them) and, on a bundle's endpoint,
// the bundle's selection — decided once for the caller, then per name
// without allocating.
func (m *Server) listFilter(ctx context.Context, snap *registry.Snapshot) func(*registry.Tool) bool {
	pol := pipeline.PolicyFrom(ctx)
	if pol == nil {
		pol = m.pipe.Policy()
	}
	inBundle := func(*registry.Tool) bool { return true }
	if name := pipeline.BundleFrom(ctx); name != "" {
		b, ok := snap.Bundle(name)
		if !ok {
			return func(*registry.Tool) bool { return false }
		}
		inBundle = b.Selects
	}
	az := pol.Authz
	if az == nil {
		return inBundle
	}
	caller, ok := policy.CallerFrom(ctx)
	if !ok || az.AllowMethod(caller, pipeline.InvokeMethod) != nil {
		return func(*registry.Tool) bool { return false }
	}
	return func(t *registry.Tool) bool { return inBundle(t) && az.ToolAllowed(caller, t.Name) }
}

// sync brings what the face keeps of the registry up to the snapshot: a
// merge of the previous snapshot's sorted entries with the new one's
// (pointer compares, O(n) and no allocation per unchanged tool; only
// changed entries are worked on). Each change of the tool set is announced
// once (notifications/tools/list_changed, which the SDK debounces); an
// unrelated registry change announces nothing.
func (m *Server) sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.reg.Snapshot().List()
	old := m.synced
	var gone []string
	changed := false
	for i, j := 0, 0; i < len(old) || j < len(cur); {
		switch {
		case j == len(cur) || (i < len(old) && old[i].Tool.Name < cur[j].Tool.Name):
			m.forgetEntry(old[i], &gone)
			changed = true
			i++
		case i == len(old) || cur[j].Tool.Name < old[i].Tool.Name:
			m.offerEntry(cur[j])
			changed = true
			j++
		default:
			if old[i] != cur[j] {
				m.defs.forget(old[i])
				m.offerEntry(cur[j])
				changed = true
			}
			i++
			j++
		}
	}
	m.synced = cur
	if len(gone) > 0 {
		m.sdk.RemoveTools(gone...)
	}
	if changed && !m.sdkLists {
		m.sdk.AddTool(&mcp.Tool{Name: listChangedTool, InputSchema: json.RawMessage(`{"type":"object"}`)}, m.unreachable)
	}
}

// offerEntry makes e's definition and tells the SDK what it needs of it.
func (m *Server) offerEntry(e *registry.Entry) {
	name := e.Tool.Name
	t, err := mcpTool(e)
	keep := false
	if err != nil {
		m.log.Error("tool not offered over MCP", "tool", name, "error", err)
		m.defs.m.Store(e, (*mcp.Tool)(nil))
		m.fast.forgetTool(name)
	} else {
		m.defs.m.Store(e, t)
		m.fast.noteTool(name, t.InputSchema)
		keep = m.sdkLists || mayCarryHeaderAnnotations(t)
	}
	switch {
	case keep:
		m.sdk.AddTool(t, m.unreachable)
		m.inSDK[name] = true
	case m.inSDK[name]: // not offered now, or its new schema has no header annotations
		m.sdk.RemoveTools(name)
		delete(m.inSDK, name)
	}
}

// forgetEntry drops what the face kept of a removed tool; gone collects
// the names the SDK holds.
func (m *Server) forgetEntry(e *registry.Entry, gone *[]string) {
	m.defs.forget(e)
	m.fast.forgetTool(e.Tool.Name)
	if m.inSDK[e.Tool.Name] {
		*gone = append(*gone, e.Tool.Name)
		delete(m.inSDK, e.Tool.Name)
	}
}

// mayCarryHeaderAnnotations: t's input schema may hold x-mcp-header
// annotations, whose Mcp-Param-* headers the SDK's transport checks.
func mayCarryHeaderAnnotations(t *mcp.Tool) bool {
	raw, ok := t.InputSchema.(json.RawMessage)
	return !ok || strings.Contains(string(raw), "x-mcp-header")
}
