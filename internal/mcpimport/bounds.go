package mcpimport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
)

// Bounds are what is read from an upstream's tools/list: an upstream is
// hostile input, and what it lists may end up in the registry and in
// every agent's context.
type Bounds struct {
	// ListBytes bounds the bytes of one listing, every page together:
	// over HTTP the responses are cut off as they arrive (the session
	// must come from mcpupstream.Connect, with MaxResponseBytes at least
	// this); over stdio, where the SDK bounds each message at 16 MiB, the
	// tools kept are counted as each page is read.
	ListBytes int64
	// Tools bounds the tools of one listing.
	Tools int
	// DescriptionBytes and SchemaBytes bound one tool's description and
	// each of its schemas (as JSON); a tool over either is not kept but
	// reported (Oversized), so a follower keeps its registered revision.
	DescriptionBytes int
	SchemaBytes      int
}

// The default bounds (the policy's mcp_upstreams.max_list_bytes,
// max_tools, max_description_bytes and max_schema_bytes).
const (
	DefaultMaxListBytes        = 16 << 20
	DefaultMaxTools            = MaxListed
	DefaultMaxDescriptionBytes = 16 << 10
	DefaultMaxSchemaBytes      = 256 << 10
)

// DefaultBounds are the default bounds.
func DefaultBounds() Bounds {
	return Bounds{ListBytes: DefaultMaxListBytes, Tools: DefaultMaxTools, DescriptionBytes: DefaultMaxDescriptionBytes, SchemaBytes: DefaultMaxSchemaBytes}
}

// Or is b with each unset (zero) bound taken from d.
func (b Bounds) Or(d Bounds) Bounds {
	if b.ListBytes <= 0 {
		b.ListBytes = d.ListBytes
	}
	if b.Tools <= 0 {
		b.Tools = d.Tools
	}
	if b.DescriptionBytes <= 0 {
		b.DescriptionBytes = d.DescriptionBytes
	}
	if b.SchemaBytes <= 0 {
		b.SchemaBytes = d.SchemaBytes
	}
	return b
}

// Check refuses bounds above what the registry admits (a tool the
// listing keeps must still be registrable).
func (b Bounds) Check() error {
	switch {
	case b.DescriptionBytes > registry.MaxDescriptionBytes:
		return fmt.Errorf("max_description_bytes %d: at most %d (the registry's bound)", b.DescriptionBytes, registry.MaxDescriptionBytes)
	case b.SchemaBytes > registry.MaxSchemaBytes:
		return fmt.Errorf("max_schema_bytes %d: at most %d (the registry's bound)", b.SchemaBytes, registry.MaxSchemaBytes)
	case b.ListBytes < 0 || b.Tools < 0 || b.DescriptionBytes < 0 || b.SchemaBytes < 0:
		return errors.New("bounds must not be negative")
	}
	return nil
}

// Oversized is an upstream tool over a bound: left out of a listing.
// Tool is its name (at most 128 bytes; a longer one names no registered
// tool and is cut), Bound which bound, Size its size.
type Oversized struct {
	Tool  string
	Bound string // "description", "input_schema" or "output_schema"
	Size  int
	Limit int
}

func (o Oversized) String() string {
	return fmt.Sprintf("its %s is %d bytes, over the bound of %d", o.Bound, o.Size, o.Limit)
}

// ErrListTooLarge is the cause of a listing over Bounds.ListBytes.
var ErrListTooLarge = errors.New("the upstream's tool listing is over the byte bound")

// ListWithin reads every upstream tool (tools/list, all pages) within b:
// the tools at most b.Tools and b.ListBytes together (an error past
// either: nothing of a listing over a bound is used), each tool's
// description and schemas within theirs (a tool over one is left out and
// reported in oversized).
func ListWithin(ctx context.Context, cs *mcp.ClientSession, b Bounds) (tools []*mcp.Tool, oversized []Oversized, err error) {
	b = b.Or(DefaultBounds())
	ctx, stop := mcpupstream.WithResponseLimit(ctx, b.ListBytes)
	defer stop()
	var listed, kept int64
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			if errors.Is(context.Cause(ctx), mcpupstream.ErrResponseTooLarge) {
				return nil, nil, fmt.Errorf("%w (%d bytes)", ErrListTooLarge, b.ListBytes)
			}
			return nil, nil, err
		}
		if listed++; listed > int64(b.Tools) {
			return nil, nil, fmt.Errorf("the upstream lists more than %d tools", b.Tools)
		}
		size, over := measure(t, b)
		if over != nil {
			oversized = append(oversized, *over)
			continue
		}
		// Over stdio nothing cuts the responses off: the kept tools count.
		if kept += size; kept > b.ListBytes {
			return nil, nil, fmt.Errorf("%w (%d bytes)", ErrListTooLarge, b.ListBytes)
		}
		tools = append(tools, t)
	}
	return tools, oversized, nil
}

// measure is t's size as kept (name, description, schemas as JSON), or
// the bound it is over.
func measure(t *mcp.Tool, b Bounds) (int64, *Oversized) {
	name := t.Name
	if len(name) > 128 {
		name = name[:128]
	}
	if n := len(t.Description); n > b.DescriptionBytes {
		return 0, &Oversized{Tool: name, Bound: "description", Size: n, Limit: b.DescriptionBytes}
	}
	size := int64(len(t.Name) + len(t.Description) + len(t.Title))
	for _, s := range []struct {
		bound  string
		schema any
	}{{"input_schema", t.InputSchema}, {"output_schema", t.OutputSchema}} {
		if s.schema == nil {
			continue
		}
		js, err := json.Marshal(s.schema)
		if err != nil {
			continue // refused, naming it, when the tool is converted
		}
		if len(js) > b.SchemaBytes {
			return 0, &Oversized{Tool: name, Bound: s.bound, Size: len(js), Limit: b.SchemaBytes}
		}
		size += int64(len(js))
	}
	return size, nil
}
