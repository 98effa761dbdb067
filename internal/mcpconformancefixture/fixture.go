// Package mcpconformancefixture runs a real go-sdk MCP server over
// streamable HTTP on 127.0.0.1 offering the test tools the MCP conformance
// suite's server scenarios call (@modelcontextprotocol/conformance, the
// tools of its reference "everything" server), each behaving as its
// scenario describes. A gateway fronting it can then be run through those
// scenarios (internal/mcpconformancetest).
package mcpconformancefixture

//lint:file-ignore SA1019 the suite's scenarios exercise logging and sampling, which MCP 2026-07-28 deprecates (SEP-2577) and the dated revisions still have

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The suite's own minimal media (its everything server's constants): a
// 1x1 PNG and a WAV with one silent sample.
const (
	imagePNGBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	audioWAVBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// Texts the scenarios (and tests) look for.
const (
	SimpleText        = "This is a simple text response for testing."
	ErrorText         = "This tool intentionally returns an error for testing"
	EmbeddedText      = "This is an embedded resource content."
	EmbeddedURI       = "test://embedded-resource"
	MixedText         = "Multiple content types test:"
	MixedResourceURI  = "test://mixed-content-resource"
	MixedResourceJSON = `{"test":"data","value":123}`
)

// JSONSchema202012Tool is the tool json-schema-2020-12 looks for; its input
// schema uses the 2020-12 vocabulary a server must pass on unchanged
// (SEP-1613, SEP-2106).
const JSONSchema202012Tool = "json_schema_2020_12_tool"

// JSONSchema202012 is that tool's input schema, as the suite defines it.
const JSONSchema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`

// Server is the running fixture.
type Server struct {
	// URL is the streamable-HTTP endpoint.
	URL string
	// MCP is the go-sdk server.
	MCP *mcp.Server

	http *httptest.Server
}

// Start runs the fixture until the test ends. It keeps sessions for the
// dated revisions (their sampling, elicitation and logging scenarios need a
// session) and answers MCP 2026-07-28 requests statelessly: a go-sdk
// server does either, not both, so the protocol version header picks.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, true)
}

// StartTasks2025 is Start for a fixture that does not declare 2026-07-28's
// tasks extension (tasksext.go): its tasks are served the 2025-11-25 way
// only, whatever the revision, as an upstream that never moved.
func StartTasks2025(t testing.TB) *Server {
	t.Helper()
	return start(t, false)
}

func start(t testing.TB, tasksExt bool) *Server {
	t.Helper()
	s := &Server{MCP: newMCPServer(tasksExt)}
	get := func(*http.Request) *mcp.Server { return s.MCP }
	stateful := mcp.NewStreamableHTTPHandler(get, nil)
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	sdk := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= statelessRevision {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	// The task tools' tasks are served in front of the SDK (tasks.go).
	s.http = httptest.NewServer(&tasks{byID: map[string]*task{}, waiting: map[string]chan *answer{}, next: sdk, ext: tasksExt})
	s.URL = s.http.URL + "/mcp"
	t.Cleanup(s.http.Close)
	return s
}

// statelessRevision is the first MCP revision without sessions (SEP-2575).
const statelessRevision = "2026-07-28"

// NewMCPServer is the go-sdk server with the suite's test tools.
func NewMCPServer() *mcp.Server { return newMCPServer(true) }

func newMCPServer(tasksExt bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcp-conformance-fixture", Version: "1"}, withTasksExtension(withFederation(&mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
	}), tasksExt))
	for _, t := range append(append(append(tools(), taskTools()...), inputTools()...), taskExtTools(tasksExt)...) {
		s.AddTool(t.tool, t.handle)
	}
	addFederation(s) // federation.go
	addInputPrompt(s)
	return s
}

type tool struct {
	tool   *mcp.Tool
	handle mcp.ToolHandler
}

// noArgs is the input schema of a tool without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func mustDecode(b64 string) []byte {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		panic(err)
	}
	return b
}

// tools are the scenarios' tools, in the order the suite lists them.
func tools() []tool {
	image, audio := mustDecode(imagePNGBase64), mustDecode(audioWAVBase64)
	return []tool{
		{&mcp.Tool{Name: "test_simple_text", Description: "Tests simple text content response", InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text(SimpleText), nil }},
		{&mcp.Tool{Name: "test_image_content", Description: "Tests image content response", InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: image, MIMEType: "image/png"}}}, nil
			}},
		{&mcp.Tool{Name: "test_audio_content", Description: "Tests audio content response", InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: audio, MIMEType: "audio/wav"}}}, nil
			}},
		{&mcp.Tool{Name: "test_embedded_resource", Description: "Tests embedded resource content response", InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: EmbeddedURI, MIMEType: "text/plain", Text: EmbeddedText}}}}, nil
			}},
		{&mcp.Tool{Name: "test_multiple_content_types", Description: "Tests response with multiple content types (text, image, resource)", InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{
					&mcp.TextContent{Text: MixedText},
					&mcp.ImageContent{Data: image, MIMEType: "image/png"},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: MixedResourceURI, MIMEType: "application/json", Text: MixedResourceJSON}},
				}}, nil
			}},
		{&mcp.Tool{Name: "test_tool_with_logging", Description: "Tests tool that emits log messages during execution", InputSchema: noArgs},
			withLogging},
		{&mcp.Tool{Name: "test_tool_with_progress", Description: "Tests tool that reports progress notifications", InputSchema: noArgs},
			withProgress},
		{&mcp.Tool{Name: "test_error_handling", Description: "Tests error response handling", InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ErrorText}}}, nil
			}},
		{&mcp.Tool{Name: "test_sampling", Description: "Tests server-initiated sampling (LLM completion request)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)},
			sampling},
		{&mcp.Tool{Name: "test_elicitation", Description: "Tests server-initiated elicitation (user input request)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`)},
			elicit("User response", func(args map[string]any) (string, any) {
				msg, _ := args["message"].(string)
				return msg, json.RawMessage(`{"type":"object","properties":{"response":{"type":"string","description":"User's response"}},"required":["response"]}`)
			})},
		{&mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Tests elicitation with default values per SEP-1034", InputSchema: noArgs},
			elicit("Elicitation completed", func(map[string]any) (string, any) {
				return "Please review and update the form fields with defaults", json.RawMessage(`{"type":"object","properties":{
  "name":{"type":"string","description":"User name","default":"John Doe"},
  "age":{"type":"integer","description":"User age","default":30},
  "score":{"type":"number","description":"User score","default":95.5},
  "status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
  "verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`)
			})},
		{&mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Tests elicitation with enum schema improvements per SEP-1330", InputSchema: noArgs},
			elicit("Elicitation completed", func(map[string]any) (string, any) {
				return "Please select options from the enum fields", json.RawMessage(`{"type":"object","properties":{
  "untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
  "titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
  "legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
  "untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
  "titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}`)
			})},
		{&mcp.Tool{Name: JSONSchema202012Tool, Description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
			InputSchema: json.RawMessage(JSONSchema202012)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text("JSON Schema 2020-12 tool called with: " + string(req.Params.Arguments)), nil
			}},
	}
}

// step is the pause between a tool's notifications: the scenarios check
// that several arrive while the call runs.
const step = 50 * time.Millisecond

func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(step):
		return nil
	}
}

// withLogging sends three info log messages while it runs (each reaches
// the client only if it set a log level).
func withLogging(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := pause(ctx); err != nil {
				return nil, err
			}
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance-fixture", Data: msg}); err != nil {
			return nil, err
		}
	}
	return text("Tool with logging executed successfully"), nil
}

// withProgress reports 0, 50 and 100 of 100 against the request's progress
// token (none sent: the same pauses, no notifications).
func withProgress(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx); err != nil {
				return nil, err
			}
		}
		if token == nil {
			continue
		}
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100,
			Message: fmt.Sprintf("Completed step %v of 100", p)}); err != nil {
			return nil, err
		}
	}
	if token == nil {
		return text("done (no progress token)"), nil
	}
	return text(fmt.Sprint(token)), nil
}

// sampling asks its client for a completion of the prompt: a client
// before 2026-07-28 on the call's stream (one that cannot sample gets a
// text saying so, as the suite's server answers), a 2026-07-28 client (the
// gateway's session) the multi round-trip way (SEP-2322): a first call
// answers with the request, the retry carries the answer.
func sampling(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, err
	}
	if askOnStream(req) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: args.Prompt}}}})
		if err != nil {
			return text("Sampling not supported or error: " + err.Error()), nil
		}
		answer := "No response"
		if t, ok := res.Content.(*mcp.TextContent); ok && t.Text != "" {
			answer = t.Text
		}
		return text("LLM response: " + answer), nil
	}
	resp, answered := req.Params.InputResponses["sampling"]
	if !answered {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"sampling": &mcp.CreateMessageParams{MaxTokens: 100,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: args.Prompt}}}}}}, nil
	}
	answer := "No response"
	var content []mcp.Content
	switch r := resp.(type) {
	case *mcp.CreateMessageWithToolsResult:
		content = r.Content
	case *mcp.CreateMessageResult:
		content = []mcp.Content{r.Content}
	}
	if len(content) == 1 {
		if t, ok := content[0].(*mcp.TextContent); ok && t.Text != "" {
			answer = t.Text
		}
	}
	return text("LLM response: " + answer), nil
}

// elicit asks its client for input with the message and schema request
// gives from the arguments (on the stream or in rounds, as sampling) and
// answers "<prefix>: action=…, content=…".
func elicit(prefix string, request func(args map[string]any) (msg string, schema any)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
		}
		if askOnStream(req) {
			msg, schema := request(args)
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: schema})
			if err != nil {
				return text("Elicitation not supported or error: " + err.Error()), nil
			}
			return elicited(prefix, res), nil
		}
		resp, answered := req.Params.InputResponses["elicitation"]
		if !answered {
			msg, schema := request(args)
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"elicitation": &mcp.ElicitParams{Message: msg, RequestedSchema: schema}}}, nil
		}
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return text(fmt.Sprintf("Elicitation not supported or error: an answer of type %T", resp)), nil
		}
		return elicited(prefix, res), nil
	}
}

func elicited(prefix string, res *mcp.ElicitResult) *mcp.CallToolResult {
	content, err := json.Marshal(res.Content)
	if err != nil || res.Content == nil {
		content = []byte("{}")
	}
	return text(fmt.Sprintf("%s: action=%s, content=%s", prefix, res.Action, content))
}

// askOnStream: the request's session is on a revision before 2026-07-28,
// whose client the fixture asks itself on the call's stream (errors as
// text, as the suite's own server answers); a 2026-07-28 session (the
// gateway's) is asked in rounds.
func askOnStream(req *mcp.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion < statelessRevision
}
