package mcpapi

// resources/list, resources/templates/list and resources/read of the
// upstreams in the caller's view (federation.go), their URIs in the face's
// form (UpstreamScheme), each listed and read only as the caller's
// resource allow and deny lists admit it (authz resources).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
)

func init() {
	federatedMethods["resources/list"] = func(m *Server, ctx context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		return m.listResources(ctx, method)
	}
	federatedMethods["resources/templates/list"] = func(m *Server, ctx context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		return m.listResourceTemplates(ctx, method)
	}
	federatedMethods["resources/read"] = func(m *Server, ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.ReadResourceRequest)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": malformed request"}
		}
		return m.readResource(ctx, r)
	}
}

// resourcesView is the upstreams in the caller's view that offer
// resources; none when the caller may list no resource.
func (m *Server) resourcesView(ctx context.Context) []*federatedUpstream {
	if !m.mayListResources(ctx) {
		return nil
	}
	var out []*federatedUpstream
	for _, u := range m.view(ctx) {
		if c := m.upstreamCaps(ctx, u); c != nil && c.Resources != nil {
			out = append(out, u)
		}
	}
	return out
}

// listUpstreamPages reads an upstream listing page by page within the
// bounds: at most maxListPages pages, the backend receive limit over all
// of them (measured as JSON, for stdio upstreams too), and keep's count.
// keep sees each page and returns how many items it kept so far; the
// listing stops when that reaches limit.
func (m *Server) listUpstreamPages(ctx context.Context, cs *mcp.ClientSession, limit int,
	page func(ctx context.Context, cursor string) (next string, raw any, err error), keep func(raw any) int) error {
	var cursor string
	total := 0
	for range maxListPages {
		next, raw, err := page(ctx, cursor)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(raw)
		if total += len(b); total > m.upstreams.MaxResponseBytes() {
			return errTooLarge
		}
		if keep(raw) >= limit || next == "" || next == cursor {
			return nil
		}
		cursor = next
	}
	return nil
}

// listResources is resources/list: every resource of the upstreams in the
// caller's view that the caller's resource lists admit, in one page.
func (m *Server) listResources(ctx context.Context, method string) (mcp.Result, error) {
	view := m.resourcesView(ctx)
	if len(view) == 0 {
		return nil, notOffered(method)
	}
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for _, u := range view {
		rs, err := m.resourceListing(ctx, u)
		if err != nil {
			m.log.WarnContext(ctx, "MCP federation: resources not listed", "namespace", u.ns, "error", err)
			continue
		}
		for _, r := range rs {
			uri, ok := u.gatewayURI(r.URI)
			if !ok || !m.mayReadResource(ctx, uri) {
				continue
			}
			// Icons and _meta are the upstream's to point anywhere (its
			// own address included): not passed on.
			out.Resources = append(out.Resources, &mcp.Resource{URI: uri, Name: r.Name, Title: r.Title, Description: r.Description,
				MIMEType: r.MIMEType, Size: r.Size, Annotations: r.Annotations})
		}
	}
	return out, nil
}

// listResourceTemplates is resources/templates/list, as listResources.
func (m *Server) listResourceTemplates(ctx context.Context, method string) (mcp.Result, error) {
	view := m.resourcesView(ctx)
	if len(view) == 0 {
		return nil, notOffered(method)
	}
	out := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for _, u := range view {
		ts, err := m.upstreamTemplates(ctx, u)
		if err != nil {
			m.log.WarnContext(ctx, "MCP federation: resource templates not listed", "namespace", u.ns, "error", err)
		}
		out.ResourceTemplates = append(out.ResourceTemplates, ts...)
	}
	return out, nil
}

// upstreamTemplates is u's resource templates the caller may see, in the
// face's form.
func (m *Server) upstreamTemplates(ctx context.Context, u *federatedUpstream) ([]*mcp.ResourceTemplate, error) {
	ts, err := m.templateListing(ctx, u)
	if err != nil {
		return nil, err
	}
	var out []*mcp.ResourceTemplate
	for _, t := range ts {
		uri, ok := u.gatewayURI(t.URITemplate)
		if !ok || !m.mayReadResource(ctx, uri) {
			continue
		}
		out = append(out, &mcp.ResourceTemplate{URITemplate: uri, Name: t.Name, Title: t.Title, Description: t.Description,
			MIMEType: t.MIMEType, Annotations: t.Annotations})
	}
	return out, nil
}

// resourceNotFound is the answer for a URI the caller cannot read
// (-32602, SEP-2164's resource-not-found code): one
// that names no upstream in its view, one its resource lists refuse, and
// one the upstream does not have all get it, so guessing tells nothing.
func resourceNotFound(uri string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %q not found", policy.Bound(uri))}
}

// readResource is resources/read: the face URI names the upstream and its
// URI (upstreamOfURI); the answer is held to the backend receive limit and its contents'
// URIs put in the face's form. Every read gets an audit line.
func (m *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	start := time.Now()
	if req.Params == nil || req.Params.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read: missing uri"}
	}
	if len(m.resourcesView(ctx)) == 0 {
		return nil, notOffered("resources/read") // not declared to this caller
	}
	uri := req.Params.URI
	var u *federatedUpstream
	var upstreamURI string
	if m.mayReadResource(ctx, uri) {
		if u, upstreamURI = m.upstreamOfURI(ctx, uri); u != nil {
			if c := m.upstreamCaps(ctx, u); c == nil || c.Resources == nil {
				u = nil
			}
		}
	}
	if u == nil {
		m.auditFederated(ctx, "resources/read", auditURI(uri), start, policy.DecisionDeny, "resource-not-offered", nil)
		return nil, resourceNotFound(uri)
	}
	// A 2026-07-28 caller's round (fedinput.go), held to it, this face URI
	// and the clock before anything reaches the upstream.
	q, rev := roundRequest{"resources/read", uri}, requestRevision(req)
	round, err := m.federatedRound(ctx, q, rev, req.Params.Meta, req.Params.InputResponses, req.Params.RequestState)
	if err != nil {
		m.auditFederated(ctx, "resources/read", auditURI(uri), start, policy.DecisionDeny, "input-state-invalid", nil)
		return nil, err
	}
	res := &mcp.ReadResourceResult{}
	err = m.withUpstreamRound(ctx, u, roundInput(q, upstreamURI, round), &mcp.ReadResourceParams{URI: upstreamURI}, res)
	if err == nil {
		if b, _ := json.Marshal(res); len(b) > m.upstreams.MaxResponseBytes() {
			err = errTooLarge
		}
	}
	if refusal := roundRefusal(err); refusal != nil {
		m.auditRefusal(ctx, "resources/read", auditURI(uri), start, err, nil, round)
		return nil, refusal
	}
	if err != nil {
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) && (rpc.Code == jsonrpc.CodeInvalidParams || rpc.Code == -32002) { // -32602 since SEP-2164, -32002 before it
			m.auditRound(ctx, "resources/read", auditURI(uri), start, policy.DecisionDeny, "resource-not-found", nil, round)
			return nil, resourceNotFound(uri)
		}
		m.auditRound(ctx, "resources/read", auditURI(uri), start, policy.DecisionError, federatedReason(err), nil, round)
		return nil, m.upstreamError(ctx, "resources/read", uri, err)
	}
	if round != nil && round.Asked {
		state, err := m.sealRound(ctx, q, round)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
		if err := m.auditRound(ctx, "resources/read", auditURI(uri), start, policy.DecisionAllow, "", nil, round); err != nil {
			return nil, auditNotWritten("resources/read", uri)
		}
		out := inputRequired(&mcp.ReadResourceResult{})
		out.InputRequests, out.RequestState = res.InputRequests, state
		return out, nil
	}
	out := completeUnder(rev, &mcp.ReadResourceResult{})
	out.Contents, out.Cacheable = make([]*mcp.ResourceContents, 0, len(res.Contents)), mcp.Cacheable{CacheScope: "private"}
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		cc := *c
		if c.URI == "" {
			cc.URI = uri
		} else if fu, ok := u.gatewayURI(c.URI); ok {
			cc.URI = fu
		} else {
			continue // a prefix-less upstream's contents under a URI that reads as a prefixed one
		}
		cc.Meta = nil
		out.Contents = append(out.Contents, &cc)
	}
	if err := m.auditRound(ctx, "resources/read", auditURI(uri), start, policy.DecisionAllow, "", nil, round); err != nil {
		return nil, auditNotWritten("resources/read", uri)
	}
	return out, nil
}

// auditURI is a face URI as its audit line records it: its query, where
// template variables and tokens travel, redacted.
func auditURI(uri string) string {
	if base, _, ok := strings.Cut(uri, "?"); ok {
		return base + "?" + policy.Redacted
	}
	return uri
}

// federatedReason is an audit reason for a failed upstream request.
func federatedReason(err error) string {
	if errors.Is(err, errTooLarge) || errors.Is(err, mcpupstream.ErrResponseTooLarge) {
		return "backend-response-too-large"
	}
	return "backend-unavailable"
}

// auditNotWritten withholds an answer whose audit line could not be
// written (audit on_failure: fail-closed).
func auditNotWritten(method, name string) error {
	return &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable, Message: fmt.Sprintf("%s %q: the audit log could not record the request, so its answer is withheld", method, policy.Bound(name))}
}

// auditFederated writes a federated request's audit line; args are the
// argument names sent, whose values are redacted (nothing declares which
// are sensitive, so none is logged).
func (m *Server) auditFederated(ctx context.Context, method, name string, start time.Time, decision, reason string, args map[string]string, repairs ...policy.AuditRepair) error {
	return m.pipe.Audit().RecordFederated(ctx, m.federatedRecord(ctx, method, name, start, decision, reason, args, repairs...))
}

// federatedRecord is a federated request's audit record.
func (m *Server) federatedRecord(ctx context.Context, method, name string, start time.Time, decision, reason string, args map[string]string, repairs ...policy.AuditRepair) policy.AuditRecord {
	rec := policy.AuditRecord{Time: start, Operation: method, Tool: name, Decision: decision, Reason: reason, Repairs: repairs,
		LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
	if c, ok := policy.CallerFrom(ctx); ok {
		rec.CallerSubject, rec.CallerMethod = c.Subject, c.Method
	}
	if len(args) > 0 {
		red := make(map[string]string, len(args))
		for k := range args {
			red[k] = policy.Redacted
		}
		rec.ArgsSent, _ = json.Marshal(red)
	}
	return rec
}
