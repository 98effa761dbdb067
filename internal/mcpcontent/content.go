// Package mcpcontent converts an MCP tools/call result's content blocks and
// _meta (the go-sdk's types) to and from the contract's ContentBlock and
// Struct, so an upstream MCP server's answer reaches either face whole:
// text, image, audio, resource_link and embedded resources, with their
// annotations and _meta. A pure library: no I/O.
package mcpcontent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// FromMCP is content as the contract's blocks, in order. A block of a kind
// a tool result cannot hold (sampling's tool_use or tool_result) is an
// error: it is not the upstream's answer to a tools/call.
func FromMCP(content []mcp.Content) ([]*gatewayv1.ContentBlock, error) {
	if len(content) == 0 {
		return nil, nil
	}
	out := make([]*gatewayv1.ContentBlock, 0, len(content))
	for i, c := range content {
		b, err := blockFromMCP(c)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func blockFromMCP(c mcp.Content) (*gatewayv1.ContentBlock, error) {
	var (
		b    = &gatewayv1.ContentBlock{}
		meta mcp.Meta
		ann  *mcp.Annotations
	)
	switch c := c.(type) {
	case *mcp.TextContent:
		b.Block = &gatewayv1.ContentBlock_Text{Text: &gatewayv1.TextContent{Text: c.Text}}
		meta, ann = c.Meta, c.Annotations
	case *mcp.ImageContent:
		b.Block = &gatewayv1.ContentBlock_Image{Image: &gatewayv1.MediaContent{Data: c.Data, MimeType: c.MIMEType}}
		meta, ann = c.Meta, c.Annotations
	case *mcp.AudioContent:
		b.Block = &gatewayv1.ContentBlock_Audio{Audio: &gatewayv1.MediaContent{Data: c.Data, MimeType: c.MIMEType}}
		meta, ann = c.Meta, c.Annotations
	case *mcp.ResourceLink:
		icons, err := iconsFromMCP(c.Icons)
		if err != nil {
			return nil, err
		}
		b.Block = &gatewayv1.ContentBlock_ResourceLink{ResourceLink: &gatewayv1.ResourceLink{Uri: c.URI, Name: c.Name, Title: c.Title,
			Description: c.Description, MimeType: c.MIMEType, Size: c.Size, Icons: icons}}
		meta, ann = c.Meta, c.Annotations
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return nil, fmt.Errorf("an embedded resource without contents")
		}
		er := &gatewayv1.EmbeddedResource{Uri: r.URI, MimeType: r.MIMEType}
		if r.Blob != nil {
			er.Contents = &gatewayv1.EmbeddedResource_Blob{Blob: r.Blob}
		} else {
			er.Contents = &gatewayv1.EmbeddedResource_Text{Text: r.Text}
		}
		m, err := toStruct(map[string]any(r.Meta))
		if err != nil {
			return nil, fmt.Errorf("resource _meta: %w", err)
		}
		er.Meta = m
		b.Block = &gatewayv1.ContentBlock_Resource{Resource: er}
		meta, ann = c.Meta, c.Annotations
	default:
		return nil, fmt.Errorf("a %T block is not a tool result's content", c)
	}
	var err error
	if b.Meta, err = toStruct(map[string]any(meta)); err != nil {
		return nil, fmt.Errorf("_meta: %w", err)
	}
	if ann != nil {
		if b.Annotations, err = toStruct(ann); err != nil {
			return nil, fmt.Errorf("annotations: %w", err)
		}
	}
	return b, nil
}

// ToMCP is the contract's blocks as MCP content, in order. A block with
// nothing set (a newer kind this gateway does not know) is an error rather
// than a silently missing part of the answer.
func ToMCP(blocks []*gatewayv1.ContentBlock) ([]mcp.Content, error) {
	out := make([]mcp.Content, 0, len(blocks))
	for i, b := range blocks {
		c, err := blockToMCP(b)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func blockToMCP(b *gatewayv1.ContentBlock) (mcp.Content, error) {
	meta := mcp.Meta(structMap(b.GetMeta()))
	var ann *mcp.Annotations
	if a := b.GetAnnotations(); a != nil {
		ann = new(mcp.Annotations)
		if err := fromStruct(a, ann); err != nil {
			return nil, fmt.Errorf("annotations: %w", err)
		}
	}
	switch x := b.GetBlock().(type) {
	case *gatewayv1.ContentBlock_Text:
		return &mcp.TextContent{Text: x.Text.GetText(), Meta: meta, Annotations: ann}, nil
	case *gatewayv1.ContentBlock_Image:
		return &mcp.ImageContent{Data: x.Image.GetData(), MIMEType: x.Image.GetMimeType(), Meta: meta, Annotations: ann}, nil
	case *gatewayv1.ContentBlock_Audio:
		return &mcp.AudioContent{Data: x.Audio.GetData(), MIMEType: x.Audio.GetMimeType(), Meta: meta, Annotations: ann}, nil
	case *gatewayv1.ContentBlock_ResourceLink:
		l := x.ResourceLink
		icons := make([]mcp.Icon, len(l.GetIcons()))
		for i, s := range l.GetIcons() {
			if err := fromStruct(s, &icons[i]); err != nil {
				return nil, fmt.Errorf("icons[%d]: %w", i, err)
			}
		}
		if len(icons) == 0 {
			icons = nil
		}
		return &mcp.ResourceLink{URI: l.GetUri(), Name: l.GetName(), Title: l.GetTitle(), Description: l.GetDescription(),
			MIMEType: l.GetMimeType(), Size: l.Size, Icons: icons, Meta: meta, Annotations: ann}, nil
	case *gatewayv1.ContentBlock_Resource:
		r := x.Resource
		rc := &mcp.ResourceContents{URI: r.GetUri(), MIMEType: r.GetMimeType(), Text: r.GetText(), Blob: r.GetBlob(),
			Meta: mcp.Meta(structMap(r.GetMeta()))}
		if _, isBlob := r.GetContents().(*gatewayv1.EmbeddedResource_Blob); isBlob && rc.Blob == nil {
			rc.Blob = []byte{} // an empty blob is still a blob
		}
		return &mcp.EmbeddedResource{Resource: rc, Meta: meta, Annotations: ann}, nil
	}
	return nil, fmt.Errorf("a block of a kind this gateway does not know")
}

// Reserved says whether a result _meta key is not the backend's to set:
// the protocol's own keys ("io.modelcontextprotocol/…", e.g. the
// serverInfo each hop states for itself) and the gateway's ("flowdrop/…":
// repairs, reason, replayed). An upstream that sends them must not speak
// for the gateway or the protocol to the gateway's caller.
func Reserved(key string) bool {
	return strings.HasPrefix(key, "io.modelcontextprotocol/") || strings.HasPrefix(key, "flowdrop/")
}

// ResultMeta is a result's _meta as the contract carries it, less the
// Reserved keys; nil when nothing is left.
func ResultMeta(meta map[string]any) (*structpb.Struct, error) {
	kept := make(map[string]any, len(meta))
	for k, v := range meta {
		if !Reserved(k) {
			kept[k] = v
		}
	}
	return toStruct(kept)
}

// toStruct is v (a JSON object once marshalled) as a Struct; nil for an
// empty object.
func toStruct(v any) (*structpb.Struct, error) {
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return structpb.NewStruct(m)
}

// structMap is s as a map; nil for nil.
func structMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

// fromStruct decodes s into v through JSON (v's own field names).
func fromStruct(s *structpb.Struct, v any) error {
	raw, err := json.Marshal(s.AsMap())
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

func iconsFromMCP(icons []mcp.Icon) ([]*structpb.Struct, error) {
	if len(icons) == 0 {
		return nil, nil
	}
	out := make([]*structpb.Struct, len(icons))
	for i := range icons {
		s, err := toStruct(&icons[i])
		if err != nil {
			return nil, fmt.Errorf("icons[%d]: %w", i, err)
		}
		if s == nil {
			s = &structpb.Struct{}
		}
		out[i] = s
	}
	return out, nil
}
