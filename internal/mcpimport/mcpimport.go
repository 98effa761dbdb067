// Package mcpimport turns an upstream MCP server's tools into gateway
// tools of the MCP-tool kind (what `flowdropctl tools import mcp` runs).
//
// Names: the gateway's name is the prefix followed by the upstream name
// with every character outside [a-zA-Z0-9_.-] replaced by "_". A mapped
// name longer than 64 characters, or one that two upstream tools map to,
// is refused: the tool is skipped, naming it.
package mcpimport

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/toolproto"
	"github.com/flowdrop/gateway/registry"
)

// Options say how the upstream is reached and named.
type Options struct {
	// URL is the upstream's HTTP endpoint, stored in each tool.
	URL string
	// Transport is stored in each tool (empty: detected by the gateway).
	Transport registry.MCPTransport
	// Prefix starts every gateway tool name.
	Prefix string
	// CredentialEnv and CredentialFile are the credential reference
	// stored in each tool (never the credential).
	CredentialEnv, CredentialFile string
}

// Skipped is an upstream tool not imported, and why.
type Skipped struct{ Tool, Reason string }

// MaxListed bounds the tools List reads from one upstream: an upstream
// that keeps handing out pages cannot grow the gateway without end.
const MaxListed = 10000

// List reads every upstream tool (tools/list, all pages) within the
// default bounds, leaving out the oversized ones (ListWithin).
func List(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	tools, _, err := ListWithin(ctx, cs, DefaultBounds())
	return tools, err
}

// MapName is the gateway's name for an upstream tool under prefix, and
// whether it is a valid tool name.
func MapName(prefix, upstream string) (string, bool) {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range upstream {
		if r < 0x80 && (r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	return name, upstream != "" && registry.ValidName(name)
}

// Tools is one gateway tool per upstream tool, in the upstream's name
// order, each admitted as the registry would (its schema compiled); the
// rest are skipped with their reasons.
func Tools(upstream []*mcp.Tool, o Options) ([]*gatewayv1.Tool, []Skipped, error) {
	if !registry.ValidName(o.Prefix+"x") || len(o.Prefix) > 63 {
		return nil, nil, fmt.Errorf("prefix %q: a tool name must match %s", o.Prefix, registry.NamePattern)
	}
	sorted := slices.Clone(upstream)
	slices.SortFunc(sorted, func(a, b *mcp.Tool) int { return cmp.Compare(a.Name, b.Name) })
	byName := map[string][]string{}
	for _, t := range sorted {
		name, _ := MapName(o.Prefix, t.Name)
		byName[name] = append(byName[name], t.Name)
	}
	var tools []*gatewayv1.Tool
	var skipped []Skipped
	for _, t := range sorted {
		name, ok := MapName(o.Prefix, t.Name)
		if !ok {
			skipped = append(skipped, Skipped{t.Name, fmt.Sprintf("its gateway name %q does not fit %s", name, registry.NamePattern)})
			continue
		}
		if same := byName[name]; len(same) > 1 {
			skipped = append(skipped, Skipped{t.Name, fmt.Sprintf("upstream tools %q all map to %q", same, name)})
			continue
		}
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			skipped = append(skipped, Skipped{t.Name, err.Error()})
			continue
		}
		var outSchema *structpb.Struct
		if t.OutputSchema != nil {
			if outSchema, err = inputSchema(t.OutputSchema); err != nil {
				skipped = append(skipped, Skipped{t.Name, strings.Replace(err.Error(), "input schema", "output schema", 1)})
				continue
			}
		}
		spec := &registry.MCPTool{URL: o.URL, Tool: t.Name, CredentialEnv: o.CredentialEnv, CredentialFile: o.CredentialFile, Transport: o.Transport}
		if _, err := registry.Compile(registry.Tool{Name: name, InputSchema: schema, OutputSchema: outSchema, Spec: &registry.BackendSpec{MCPTool: spec}}); err != nil {
			skipped = append(skipped, Skipped{t.Name, err.Error()})
			continue
		}
		tools = append(tools, &gatewayv1.Tool{Name: name, Description: t.Description, InputSchema: schema,
			Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{
				Url: o.URL, Tool: t.Name, CredentialEnv: o.CredentialEnv, CredentialFile: o.CredentialFile,
				Transport: toolproto.MCPTransportProto(o.Transport)}}},
			Annotations: annotations(t.Annotations), OutputSchema: outSchema,
			// The upstream may change the tool only through a pending change
			// an admin approves (internal/mcppin); the registry computes the
			// digest of the definition imported.
			Origin: &gatewayv1.ToolOrigin{McpUpstream: o.URL}})
	}
	return tools, skipped, nil
}

// inputSchema is an upstream tool's input schema as a Struct.
func inputSchema(s any) (*structpb.Struct, error) {
	if s == nil {
		return nil, fmt.Errorf("it has no input schema")
	}
	js, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("its input schema does not encode: %v", err)
	}
	out := &structpb.Struct{}
	if err := protojson.Unmarshal(js, out); err != nil {
		return nil, fmt.Errorf("its input schema is not a JSON object")
	}
	return out, nil
}

// annotations keeps the upstream tool's hints (the gateway retries a tool
// only when it is marked idempotent). MCP's idempotentHint is a plain bool
// whose default is false, so false stays unset.
func annotations(a *mcp.ToolAnnotations) *gatewayv1.ToolAnnotations {
	if a == nil {
		return nil
	}
	out := &gatewayv1.ToolAnnotations{DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
	if a.ReadOnlyHint {
		out.ReadOnlyHint = proto.Bool(true)
	}
	if a.IdempotentHint {
		out.IdempotentHint = proto.Bool(true)
	}
	return out
}
