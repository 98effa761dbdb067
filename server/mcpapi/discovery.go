package mcpapi

// Discovery mode (view.go): for a catalog too large to list, tools/list
// offers two meta-tools instead — one ranking the caller's visible tools
// against a query (registry/search), one describing a tool fully — and
// tools/call goes straight to the real tools by name, under the same
// visibility and policy as ever. The meta-tools' names are reserved in the
// registry, so no tool can shadow them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/search"
	"github.com/flowdrop/gateway/server/pipeline"
)

// reasonToolNotFound is describe's reason for a tool the caller cannot
// see or that does not exist (the same answer: existence is not told).
const reasonToolNotFound = "tool-not-found"

var (
	searchTool = &mcp.Tool{
		Name: registry.SearchToolsName,
		Description: "Search the tools you can call. Returns the best matches for the query, ranked, " +
			"each with its name and a short description; describe a tool with " + registry.DescribeToolName +
			" to get its input schema, then call it by its name.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","minLength":1,"maxLength":%d,"description":"What the tool should do, in words: e.g. \"create a github issue\"."},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"How many tools to return (default %d)."}},`+
			`"required":["query"],"additionalProperties":false}`, search.MaxQueryBytes, search.MaxLimit, search.DefaultLimit)),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object",` +
			`"properties":{"name":{"type":"string"},"description":{"type":"string"}},"required":["name","description"]}}},"required":["tools"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}
	describeTool = &mcp.Tool{
		Name:        registry.DescribeToolName,
		Description: "Describe one tool you can call: its full description and input schema (and output schema, if it has one).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":64,` +
			`"description":"The tool's name, as ` + registry.SearchToolsName + ` returned it."}},"required":["name"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"description":{"type":"string"},` +
			`"inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"type":"object"}},"required":["name","inputSchema"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}
)

// metaTools are discovery mode's tools/list: the meta-tools for a caller
// who may invoke tools, nothing for one who may not (as its full list
// would be empty).
func (m *Server) metaTools(ctx context.Context) []*mcp.Tool {
	if m.mayInvoke(ctx) != nil {
		return []*mcp.Tool{}
	}
	return []*mcp.Tool{searchTool, describeTool}
}

// mayInvoke is the role check of tools/call (the pipeline's, by
// InvokeTool's method name) for the request in ctx.
func (m *Server) mayInvoke(ctx context.Context) error {
	pol := pipeline.PolicyFrom(ctx)
	if pol == nil {
		pol = m.pipe.Policy()
	}
	if pol.Authz == nil {
		return nil
	}
	c, _ := policy.CallerFrom(ctx)
	if err := pol.Authz.AllowMethod(c, pipeline.InvokeMethod); err != nil {
		return err
	}
	return nil
}

// callMeta answers a tools/call of a meta-tool in discovery mode. It is
// held to the caller's role and rate limit as a tool call is; what it
// returns is what the caller may see (pipeline.Visible).
func (m *Server) callMeta(ctx context.Context, p *mcp.CallToolParamsRaw, rev string) (*callResult, error) {
	pol := pipeline.PolicyFrom(ctx)
	if pol == nil {
		pol = m.pipe.Policy()
	}
	if err := m.mayInvoke(ctx); err != nil {
		return m.callError(ctx, pipeline.Classify(err), normalize.Report{})
	}
	c, _ := policy.CallerFrom(ctx)
	if rl := pol.RateLimit; rl.On() {
		// A bucket per meta-tool: two names, the limiter stays bounded.
		if err := rl.Allow(ctx, c, p.Name); err != nil && !rl.Shadow() {
			e := pipeline.Classify(err)
			e.Tool = p.Name
			return m.callError(ctx, e, normalize.Report{})
		}
	}
	switch p.Name {
	case registry.SearchToolsName:
		return m.searchTools(ctx, p.Arguments, rev, p.Meta)
	case registry.DescribeToolName:
		return m.describeTool(ctx, p.Arguments, rev, p.Meta)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
}

// metaArguments decodes a meta-tool's arguments strictly into v: an
// object with only the properties its schema names.
func metaArguments(tool string, raw json.RawMessage, v any) *callResult {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorResult(fmt.Sprintf("%s: invalid arguments: %s", tool, policy.Bound(err.Error())), string(pipeline.ReasonArgumentsInvalid), normalize.Report{})
	}
	return nil
}

type searchHit struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// searchTools ranks the caller's visible tools against the query.
func (m *Server) searchTools(ctx context.Context, raw json.RawMessage, rev string, meta mcp.Meta) (*callResult, error) {
	var args struct {
		Query *string `json:"query"`
		Limit *int    `json:"limit"`
	}
	if bad := metaArguments(registry.SearchToolsName, raw, &args); bad != nil {
		return bad, nil
	}
	if args.Query == nil {
		return errorResult(registry.SearchToolsName+": query is required", string(pipeline.ReasonArgumentsInvalid), normalize.Report{}), nil
	}
	limit := 0
	if args.Limit != nil {
		if *args.Limit < 1 {
			return errorResult(fmt.Sprintf("%s: limit must be at least 1, got %d", registry.SearchToolsName, *args.Limit), string(pipeline.ReasonArgumentsInvalid), normalize.Report{}), nil
		}
		limit = *args.Limit
	}
	hits, err := m.search.Search(*args.Query, limit, func(name string) bool { return m.pipe.Visible(ctx, name) })
	if err != nil {
		return errorResult(registry.SearchToolsName+": "+err.Error(), string(pipeline.ReasonArgumentsInvalid), normalize.Report{}), nil
	}
	offered := make([]*mcp.Tool, 0, len(hits))
	for _, h := range hits {
		offered = append(offered, &mcp.Tool{Name: h.Entry.Tool.Name, Description: h.Entry.Tool.Description})
	}
	// Tools this caller's protocol revision cannot call are not offered
	// here either, as in tools/list.
	offered = m.withoutTaskRequired(ctx, tasksUsable(rev, meta), offered)
	out := struct {
		Tools []searchHit `json:"tools"`
	}{Tools: make([]searchHit, 0, len(offered))}
	for _, t := range offered {
		out.Tools = append(out.Tools, searchHit{Name: t.Name, Description: search.Short(t.Description)})
	}
	return structuredResult(out)
}

// describeTool is one visible tool's full definition, as tools/list would
// have offered it.
func (m *Server) describeTool(ctx context.Context, raw json.RawMessage, rev string, meta mcp.Meta) (*callResult, error) {
	var args struct {
		Name *string `json:"name"`
	}
	if bad := metaArguments(registry.DescribeToolName, raw, &args); bad != nil {
		return bad, nil
	}
	if args.Name == nil || *args.Name == "" {
		return errorResult(registry.DescribeToolName+": name is required", string(pipeline.ReasonArgumentsInvalid), normalize.Report{}), nil
	}
	name := *args.Name
	notFound := errorResult(fmt.Sprintf("%s: no tool %q; search with %s", registry.DescribeToolName, policy.Bound(name), registry.SearchToolsName), reasonToolNotFound, normalize.Report{})
	// Visibility first: for a tool the caller may not see, the answer is
	// the one for a tool that does not exist.
	if !registry.ValidName(name) || !m.pipe.Visible(ctx, name) {
		return notFound, nil
	}
	e, ok := m.reg.Lookup(name)
	if !ok {
		return notFound, nil
	}
	t, err := mcpTool(e)
	if err != nil {
		return notFound, nil // never offered over MCP either (sync logs it)
	}
	if len(m.withoutTaskRequired(ctx, tasksUsable(rev, meta), []*mcp.Tool{t})) == 0 {
		return notFound, nil
	}
	return structuredResult(t)
}

// structuredResult is v as a result's structuredContent and, for clients
// that read only content, the same JSON as text.
func structuredResult(v any) (*callResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	return &callResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}
