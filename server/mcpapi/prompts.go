package mcpapi

// prompts/list and prompts/get of the upstreams in the caller's view
// (federation.go). A prompt's gateway name is its upstream's prefix
// followed by its mapped name (mcpimport.MapName, as for tools), and the
// caller's tool allow and deny lists decide which prompts it sees, by
// that name (pipeline.Visible). prompts/get arguments are strings: they
// are normalized as a tool's string arguments are (RT-TOOL-8 entity
// decoding, through the normalize package, within the policy's argument
// limits) and checked against the prompt's declared arguments (required
// ones present, none undeclared) before the upstream sees them.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/server/pipeline"
)

// maxPromptArguments bounds the arguments of one upstream prompt carried.
const maxPromptArguments = 64

func init() {
	federatedMethods["prompts/list"] = func(m *Server, ctx context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		return m.listPrompts(ctx, method)
	}
	federatedMethods["prompts/get"] = func(m *Server, ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.GetPromptRequest)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": malformed request"}
		}
		return m.getPrompt(ctx, r)
	}
}

// promptsView is the upstreams in the caller's view that offer prompts.
func (m *Server) promptsView(ctx context.Context) []*federatedUpstream {
	var out []*federatedUpstream
	for _, u := range m.view(ctx) {
		if c := m.upstreamCaps(ctx, u); c != nil && c.Prompts != nil {
			out = append(out, u)
		}
	}
	return out
}

// upstreamPrompts is u's prompts the caller may see, each with its
// gateway name; the upstream's own prompt is kept beside it. The listing
// is the one known (fedcache.go), read again first when fresh.
func (m *Server) upstreamPrompts(ctx context.Context, u *federatedUpstream, fresh bool) ([]federatedPrompt, error) {
	b := m.federationBounds()
	all, err := m.promptListing(ctx, u, fresh)
	if err != nil {
		return nil, err
	}
	mapped := map[string]int{}
	for _, p := range all {
		name, _ := mcpimport.MapName(u.ns, p.Name)
		mapped[name]++
	}
	var fed map[string]*federatedUpstream
	if u.ns == "" {
		fed = m.federatedUpstreams()
	}
	var out []federatedPrompt
	for _, p := range all {
		name, ok := mcpimport.MapName(u.ns, p.Name)
		if !ok || mapped[name] > 1 || len(p.Description) > b.DescriptionBytes || len(p.Title) > b.DescriptionBytes || !promptArgumentsFit(p, b) {
			continue // not reversible, or over a bound
		}
		if u.ns == "" && shadowsPrefixed(fed, name) {
			continue // a prefix-less upstream's prompt that reads as a prefixed one: not reachable
		}
		// A prompt is not a tool: the tools' lists judge its name, and a
		// bundle narrows by upstream (view), not by this name.
		if !m.pipe.Allowed(ctx, name) {
			continue
		}
		out = append(out, federatedPrompt{name: name, up: u, upstream: p})
	}
	return out, nil
}

func promptArgumentsFit(p *mcp.Prompt, b mcpimport.Bounds) bool {
	if len(p.Arguments) > maxPromptArguments {
		return false
	}
	for _, a := range p.Arguments {
		if a == nil || a.Name == "" || len(a.Name) > 256 || len(a.Description) > b.DescriptionBytes || len(a.Title) > b.DescriptionBytes {
			return false
		}
	}
	return true
}

type federatedPrompt struct {
	name     string
	up       *federatedUpstream
	upstream *mcp.Prompt
}

// listPrompts is prompts/list: every prompt of the upstreams in the
// caller's view that it may see, in one page.
func (m *Server) listPrompts(ctx context.Context, method string) (mcp.Result, error) {
	view := m.promptsView(ctx)
	if len(view) == 0 {
		return nil, notOffered(method)
	}
	out := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for _, u := range view {
		ps, err := m.upstreamPrompts(ctx, u, false)
		if err != nil {
			m.log.WarnContext(ctx, "MCP federation: prompts not listed", "namespace", u.ns, "error", err)
			continue
		}
		for _, p := range ps {
			out.Prompts = append(out.Prompts, &mcp.Prompt{Name: p.name, Title: p.upstream.Title, Description: p.upstream.Description, Arguments: p.upstream.Arguments})
		}
	}
	return out, nil
}

// findPrompt is the prompt of gateway name the caller may see, or nil: in
// the known listings, else in listings read again (a prompt added since).
func (m *Server) findPrompt(ctx context.Context, name string) *federatedPrompt {
	if !m.pipe.Allowed(ctx, name) { // as upstreamPrompts judges it
		return nil
	}
	var view []*federatedUpstream
	for _, u := range m.promptsView(ctx) {
		if strings.HasPrefix(name, u.ns) {
			view = append(view, u)
		}
	}
	for _, fresh := range []bool{false, true} {
		var found []federatedPrompt
		for _, u := range view {
			ps, err := m.upstreamPrompts(ctx, u, fresh)
			if err != nil {
				m.log.WarnContext(ctx, "MCP federation: prompts not listed", "namespace", u.ns, "error", err)
				continue
			}
			for _, p := range ps {
				if p.name == name {
					found = append(found, p)
				}
			}
		}
		switch len(found) {
		case 1:
			return &found[0]
		case 0:
			continue
		default:
			return nil // two upstreams' prefixes overlap on it: not reversible
		}
	}
	return nil
}

// unknownPrompt is the answer for a prompt the caller cannot get, whether
// it does not exist or is not the caller's to see.
func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", policy.Bound(name))}
}

// getPrompt is prompts/get.
func (m *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (mcp.Result, error) {
	start := time.Now()
	if req.Params == nil || req.Params.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get: missing prompt name"}
	}
	if len(m.promptsView(ctx)) == 0 {
		return nil, notOffered("prompts/get") // not declared to this caller
	}
	name, sent := req.Params.Name, req.Params.Arguments
	p := m.findPrompt(ctx, name)
	if p == nil {
		m.auditFederated(ctx, "prompts/get", name, start, policy.DecisionDeny, "prompt-not-offered", sent)
		return nil, unknownPrompt(name)
	}
	// A 2026-07-28 caller's round (fedinput.go): its retry is held to it,
	// this prompt and the clock before anything reaches the upstream.
	q, rev := roundRequest{"prompts/get", name}, requestRevision(req)
	round, err := m.federatedRound(ctx, q, rev, req.Params.Meta, req.Params.InputResponses, req.Params.RequestState)
	if err != nil {
		m.auditFederated(ctx, "prompts/get", name, start, policy.DecisionDeny, "input-state-invalid", sent)
		return nil, err
	}
	// Every round's arguments are normalized and checked again: a retry
	// is a whole request.
	args, report, err := m.promptArguments(ctx, p, sent)
	repairs := policy.RepairsFromReport(report)
	if err != nil {
		m.auditRound(ctx, "prompts/get", name, start, policy.DecisionDeny, "arguments-invalid", sent, round, repairs...)
		return nil, err
	}
	res := &mcp.GetPromptResult{}
	err = m.withUpstreamRound(ctx, p.up, roundInput(q, p.upstream.Name, round), &mcp.GetPromptParams{Name: p.upstream.Name, Arguments: args}, res)
	if err == nil {
		if b, _ := json.Marshal(res); len(b) > m.upstreams.MaxResponseBytes() {
			err = errTooLarge
		}
	}
	if refusal := roundRefusal(err); refusal != nil {
		m.auditRefusal(ctx, "prompts/get", name, start, err, sent, round, repairs...)
		return nil, refusal
	}
	if err != nil {
		m.auditRound(ctx, "prompts/get", name, start, policy.DecisionError, federatedReason(err), sent, round, repairs...)
		return nil, m.upstreamError(ctx, "prompts/get", name, err)
	}
	if round != nil && round.Asked {
		state, err := m.sealRound(ctx, q, round)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
		if err := m.auditRound(ctx, "prompts/get", name, start, policy.DecisionAllow, "", sent, round, repairs...); err != nil {
			return nil, auditNotWritten("prompts/get", name)
		}
		out := inputRequired(&mcp.GetPromptResult{})
		out.InputRequests, out.RequestState = res.InputRequests, state
		return out, nil
	}
	out := completeUnder(rev, &mcp.GetPromptResult{})
	out.Description, out.Messages = res.Description, make([]*mcp.PromptMessage, 0, len(res.Messages))
	for _, msg := range res.Messages {
		if msg == nil {
			continue
		}
		if c, ok := p.up.rewriteContent(msg.Content); ok {
			out.Messages = append(out.Messages, &mcp.PromptMessage{Role: msg.Role, Content: c})
		}
	}
	if rs := repairsMeta(report.Repairs); rs != nil {
		out.Meta = mcp.Meta{MCPMetaRepairs: rs}
	}
	if err := m.auditRound(ctx, "prompts/get", name, start, policy.DecisionAllow, "", sent, round, repairs...); err != nil {
		return nil, auditNotWritten("prompts/get", name)
	}
	return out, nil
}

// promptArguments are the caller's arguments normalized and checked
// against the prompt's declared arguments.
func (m *Server) promptArguments(ctx context.Context, p *federatedPrompt, sent map[string]string) (map[string]string, normalize.Report, error) {
	declared := map[string]bool{}
	props := map[string]any{}
	var required []any
	for _, a := range p.upstream.Arguments {
		declared[a.Name] = true
		props[a.Name] = map[string]any{"type": "string"}
		if a.Required {
			required = append(required, a.Name)
		}
	}
	for k := range sent {
		if !declared[k] {
			return nil, normalize.Report{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("prompts/get %q: argument %q is not one the prompt declares", policy.Bound(p.name), policy.Bound(k))}
		}
	}
	for _, r := range required {
		if _, ok := sent[r.(string)]; !ok {
			return nil, normalize.Report{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("prompts/get %q: missing required argument %q", policy.Bound(p.name), r)}
		}
	}
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		return nil, normalize.Report{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	plan, err := normalize.Compile(schema)
	if err != nil {
		return nil, normalize.Report{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	in := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(sent))}
	for k, v := range sent {
		in.Fields[k] = structpb.NewStringValue(v)
	}
	pol := pipeline.PolicyFrom(ctx)
	if pol == nil {
		pol = m.pipe.Policy()
	}
	lim := pol.Limits.WithDefaults()
	out, report, err := plan.ApplyWithin(in, normalize.Limits{MaxBytes: lim.MaxArgumentBytes, MaxStringLength: lim.MaxStringLength, MaxDepth: lim.MaxDepth,
		MaxElements: lim.MaxListElements, MaxKeys: lim.MaxObjectKeys})
	if err != nil {
		return nil, report, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompts/get %q: %v", policy.Bound(p.name), err)}
	}
	args := make(map[string]string, len(out.GetFields()))
	for k, v := range out.GetFields() {
		s, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, report, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompts/get %q: argument %q must be a string", policy.Bound(p.name), policy.Bound(k))}
		}
		if len(s.StringValue) > lim.MaxStringLength {
			return nil, report, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompts/get %q: argument %q is over %d bytes", policy.Bound(p.name), policy.Bound(k), lim.MaxStringLength)}
		}
		args[k] = s.StringValue
	}
	for _, r := range report.Repairs {
		if r.BoundHit && !pol.ForwardEntityBound {
			return nil, report, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("prompts/get %q: argument %s still holds HTML entities after the decoding passes allowed", policy.Bound(p.name), policy.Bound(r.Path))}
		}
	}
	return args, report, nil
}

// rewriteContent is an upstream's content block with the URIs it carries
// (a resource link, an embedded resource) in the face's form under u; ok
// is false for a block of a prefix-less upstream whose URI reads as a
// prefixed one, which is not carried.
func (u *federatedUpstream) rewriteContent(c mcp.Content) (_ mcp.Content, ok bool) {
	switch c := c.(type) {
	case *mcp.ResourceLink:
		cc := *c
		if cc.URI, ok = u.gatewayURI(c.URI); !ok {
			return nil, false
		}
		cc.Icons, cc.Meta = nil, nil
		return &cc, true
	case *mcp.EmbeddedResource:
		cc := *c
		if c.Resource != nil {
			rc := *c.Resource
			if rc.URI, ok = u.gatewayURI(rc.URI); !ok {
				return nil, false
			}
			rc.Meta = nil
			cc.Resource = &rc
		}
		cc.Meta = nil
		return &cc, true
	}
	return c, true
}
