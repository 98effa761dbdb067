package mcpapi

// completion/complete for the upstream prompts and resource templates the
// caller may see (prompts.go, resources.go): the reference is mapped back
// to the upstream's own name or template, the answer bounded.

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
)

func init() {
	federatedMethods["completion/complete"] = func(m *Server, ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CompleteRequest)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": malformed request"}
		}
		return m.complete(ctx, method, r)
	}
}

// The bounds of a completion answer: MCP allows at most 100 values.
const (
	maxCompletionValues     = 100
	maxCompletionValueBytes = 4 << 10
	maxCompletionContext    = 64
)

// completionsView is the upstreams in the caller's view that offer
// completions.
func (m *Server) completionsView(ctx context.Context) []*federatedUpstream {
	var out []*federatedUpstream
	for _, u := range m.view(ctx) {
		if c := m.upstreamCaps(ctx, u); c != nil && c.Completions != nil {
			out = append(out, u)
		}
	}
	return out
}

// unknownReference is the answer for a reference the caller cannot
// complete: no such prompt or template, or not the caller's to see.
func unknownReference(what string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion/complete: unknown reference %q", policy.Bound(what))}
}

func (m *Server) complete(ctx context.Context, method string, req *mcp.CompleteRequest) (mcp.Result, error) {
	if len(m.completionsView(ctx)) == 0 {
		return nil, notOffered(method)
	}
	p := req.Params
	if p == nil || p.Ref == nil || p.Argument.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: missing ref or argument"}
	}
	if p.Context != nil && len(p.Context.Arguments) > maxCompletionContext {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion/complete: over %d context arguments", maxCompletionContext)}
	}
	var u *federatedUpstream
	up := &mcp.CompleteParams{Argument: p.Argument, Context: p.Context}
	switch p.Ref.Type {
	case "ref/prompt":
		fp := m.findPrompt(ctx, p.Ref.Name)
		if fp == nil || !slices.ContainsFunc(fp.upstream.Arguments, func(a *mcp.PromptArgument) bool { return a.Name == p.Argument.Name }) {
			return nil, unknownReference(p.Ref.Name)
		}
		u = fp.up
		up.Ref = &mcp.CompleteReference{Type: "ref/prompt", Name: fp.upstream.Name}
	case "ref/resource":
		uri := p.Ref.URI
		var upstreamTemplate string
		if m.mayListResources(ctx) && m.mayReadResource(ctx, uri) {
			u, upstreamTemplate = m.upstreamOfURI(ctx, uri)
		}
		if u != nil {
			// Only a template the upstream lists (and the caller may see).
			ts, err := m.upstreamTemplates(ctx, u)
			if err != nil || !slices.ContainsFunc(ts, func(t *mcp.ResourceTemplate) bool { return t.URITemplate == uri }) {
				u = nil
			}
		}
		if u == nil {
			return nil, unknownReference(uri)
		}
		up.Ref = &mcp.CompleteReference{Type: "ref/resource", URI: upstreamTemplate}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion/complete: unknown reference type %q", policy.Bound(p.Ref.Type))}
	}
	if c := m.upstreamCaps(ctx, u); c == nil || c.Completions == nil {
		return nil, unknownReference(p.Ref.Name + p.Ref.URI)
	}
	var res *mcp.CompleteResult
	err := m.withUpstream(ctx, u, func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.Complete(ctx, up)
		res = r
		return err
	})
	if err != nil {
		return nil, m.upstreamError(ctx, method, p.Ref.Name+p.Ref.URI, err)
	}
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	for _, v := range res.Completion.Values {
		if len(out.Completion.Values) == maxCompletionValues {
			out.Completion.HasMore = true
			break
		}
		if len(v) <= maxCompletionValueBytes {
			out.Completion.Values = append(out.Completion.Values, v)
		}
	}
	out.Completion.HasMore = out.Completion.HasMore || res.Completion.HasMore
	if t := res.Completion.Total; t >= len(out.Completion.Values) {
		out.Completion.Total = t
	}
	return out, nil
}
