package mcpupstream

import (
	"errors"
	"fmt"

	sjson "github.com/segmentio/encoding/json"

	"github.com/flowdrop/gateway/internal/sdkjson"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unmarshal decodes as the go-sdk does (internal/sdkjson), from the bytes
// already read.
func unmarshal(data []byte, v any) error { return sdkjson.Unmarshal(data, v) }

// message is one JSON-RPC message from the upstream.
type message struct {
	// ID is the id when it is a string ("" otherwise: not a call of ours).
	ID    string
	rawID sjson.RawMessage
	// Method is set on a request or notification (hasMethod).
	Method    string
	hasMethod bool
	// Params are a request's params (an upstream's request for input).
	Params sjson.RawMessage
	Result sjson.RawMessage
	Error  *jsonrpc.Error
}

func (m *message) isRequest() bool { return m.hasMethod }

// hasID: a request with an id (a call, to answer), not a notification.
func (m *message) hasID() bool { return len(m.rawID) > 0 && string(m.rawID) != "null" }

// wireMessage is the SDK's wireDecode.
type wireMessage struct {
	VersionTag string           `json:"jsonrpc"`
	ID         any              `json:"id,omitempty"`
	Method     sjson.RawMessage `json:"method"`
	Params     sjson.RawMessage `json:"params,omitempty"`
	Result     sjson.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error   `json:"error,omitempty"`
}

// decodeMessage is the SDK's jsonrpc.DecodeMessage, for what a call needs.
func decodeMessage(data []byte) (*message, error) {
	var w wireMessage
	if err := unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	m := &message{}
	switch id := w.ID.(type) {
	case nil:
	case string:
		m.ID = id
		m.rawID, _ = sjson.Marshal(id)
	case float64:
		m.rawID, _ = sjson.Marshal(int64(id))
	default:
		return nil, fmt.Errorf("invalid ID type %T", id)
	}
	if len(w.Method) > 0 {
		if err := sdkjson.UnmarshalPart(w.Method, &m.Method); err != nil { // within data, checked
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		m.hasMethod, m.Params = true, w.Params
		return m, nil
	}
	if w.ID == nil {
		return nil, errors.New("JSON RPC invalid request")
	}
	m.Result, m.Error = w.Result, w.Error
	return m, nil
}

// callToolResultWire is CallToolResult's wire form, as the SDK's
// UnmarshalJSON reads it.
type callToolResultWire struct {
	Meta              mcp.Meta            `json:"_meta,omitempty"`
	Content           []*contentWire      `json:"content"`
	StructuredContent any                 `json:"structuredContent,omitempty"`
	IsError           bool                `json:"isError,omitempty"`
	InputRequests     mcp.InputRequestMap `json:"inputRequests,omitempty"`
	RequestState      string              `json:"requestState,omitempty"`
}

// contentWire is the SDK's wireContent: one content block of any kind.
type contentWire struct {
	Type              string                `json:"type"`
	Text              string                `json:"text,omitempty"`
	MIMEType          string                `json:"mimeType,omitempty"`
	Data              []byte                `json:"data,omitempty"`
	Resource          *mcp.ResourceContents `json:"resource,omitempty"`
	URI               string                `json:"uri,omitempty"`
	Name              string                `json:"name,omitempty"`
	Title             string                `json:"title,omitempty"`
	Description       string                `json:"description,omitempty"`
	Size              *int64                `json:"size,omitempty"`
	Meta              mcp.Meta              `json:"_meta,omitempty"`
	Annotations       *mcp.Annotations      `json:"annotations,omitempty"`
	Icons             []mcp.Icon            `json:"icons,omitempty"`
	ID                string                `json:"id,omitempty"`
	Input             map[string]any        `json:"input,omitempty"`
	ToolUseID         string                `json:"toolUseId,omitempty"`
	NestedContent     []*contentWire        `json:"content,omitempty"`
	StructuredContent any                   `json:"structuredContent,omitempty"`
	IsError           bool                  `json:"isError,omitempty"`
}

// decodeCallToolResult is the result as the SDK's CallToolResult.UnmarshalJSON
// makes it (its unexported resultType aside, which nothing reads).
func decodeCallToolResult(data []byte) (*mcp.CallToolResult, error) {
	if err := sdkjson.CheckDepth(data); err != nil {
		return nil, err
	}
	return decodeCallToolResultPart(data)
}

// decodeCallToolResultPart is decodeCallToolResult of the result of a
// message decodeMessage decoded, whose nesting it checked.
func decodeCallToolResultPart(data []byte) (*mcp.CallToolResult, error) {
	var w callToolResultWire
	if err := sdkjson.UnmarshalPart(data, &w); err != nil {
		return nil, err
	}
	content, err := contentsFromWire(w.Content, nil)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Meta: w.Meta, Content: content, StructuredContent: w.StructuredContent,
		IsError: w.IsError, InputRequests: w.InputRequests, RequestState: w.RequestState}, nil
}

// nestedAllowed are the kinds a tool_result block may nest.
var nestedAllowed = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true}

func contentsFromWire(ws []*contentWire, allow map[string]bool) ([]mcp.Content, error) {
	blocks := make([]mcp.Content, 0, len(ws))
	for _, w := range ws {
		b, err := contentFromWire(w, allow)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

func contentFromWire(w *contentWire, allow map[string]bool) (mcp.Content, error) {
	if w == nil {
		return nil, errors.New("nil content")
	}
	if allow != nil && !allow[w.Type] {
		return nil, fmt.Errorf("invalid content type %q", w.Type)
	}
	switch w.Type {
	case "text":
		return &mcp.TextContent{Text: w.Text, Meta: w.Meta, Annotations: w.Annotations}, nil
	case "image":
		return &mcp.ImageContent{MIMEType: w.MIMEType, Data: w.Data, Meta: w.Meta, Annotations: w.Annotations}, nil
	case "audio":
		return &mcp.AudioContent{MIMEType: w.MIMEType, Data: w.Data, Meta: w.Meta, Annotations: w.Annotations}, nil
	case "resource_link":
		return &mcp.ResourceLink{URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description,
			MIMEType: w.MIMEType, Size: w.Size, Meta: w.Meta, Annotations: w.Annotations, Icons: w.Icons}, nil
	case "resource":
		return &mcp.EmbeddedResource{Resource: w.Resource, Meta: w.Meta, Annotations: w.Annotations}, nil
	case "tool_use":
		//lint:ignore SA1019 the SDK decodes sampling blocks in a result too; so must this, to give the same result
		return &mcp.ToolUseContent{ID: w.ID, Name: w.Name, Input: w.Input, Meta: w.Meta}, nil
	case "tool_result":
		//lint:ignore SA1019 as tool_use
		v := &mcp.ToolResultContent{ToolUseID: w.ToolUseID, StructuredContent: w.StructuredContent, IsError: w.IsError, Meta: w.Meta}
		if w.NestedContent != nil {
			nested, err := contentsFromWire(w.NestedContent, nestedAllowed)
			if err != nil {
				return nil, fmt.Errorf("tool_result nested content: %w", err)
			}
			v.Content = nested
		}
		return v, nil
	}
	return nil, fmt.Errorf("unrecognized content type %q", w.Type)
}
