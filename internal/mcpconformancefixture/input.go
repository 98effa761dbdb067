package mcpconformancefixture

//lint:file-ignore SA1019 the suite's multi round-trip scenarios ask for sampling and roots, which MCP 2026-07-28 deprecates (SEP-2577) and still carries

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi round-trip tools (MCP 2026-07-28, SEP-2322) of the suite's
// input-required-result-* scenarios, and server-stateless's tools that
// need a client capability (test_missing_capability,
// test_streaming_elicitation): each asks for input with an
// InputRequiredResult as its scenario describes and answers once the retry
// carries the inputResponses. A requestState is HMAC-signed under a key of
// the process, so a changed one is refused (-32602) as the tampered-state
// scenario requires.

// stateKey signs the fixture's requestStates.
var stateKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	return k
}()

// signState is payload.hex(HMAC-SHA256(payload)).
func signState(payload string) string {
	mac := hmac.New(sha256.New, stateKey)
	mac.Write([]byte(payload))
	return payload + "." + hex.EncodeToString(mac.Sum(nil))
}

// openState is the payload of a state signState made, or an invalid-params
// error for any other.
func openState(state string) (string, error) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 || !hmac.Equal([]byte(signState(state[:i])), []byte(state)) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState failed its integrity check"}
	}
	return state[:i], nil
}

// Input requests the scenarios name.
var (
	askName = &mcp.ElicitParams{Message: "What is your name?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}
	askConfirm = &mcp.ElicitParams{Message: "Please confirm",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)}
	askColor = &mcp.ElicitParams{Message: "Step 2: What is your favorite color?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`)}
	askStep1 = &mcp.ElicitParams{Message: "Step 1: What is your name?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}
	askCapital = &mcp.CreateMessageParams{MaxTokens: 100,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is the capital of France?"}}}}
	askGreeting = &mcp.CreateMessageParams{MaxTokens: 50,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Generate a greeting"}}}}
	askRoots = &mcp.ListRootsParams{}
)

// inputTools are those tools.
func inputTools() []tool {
	noInput := func(name, desc string, h mcp.ToolHandler) tool {
		return tool{&mcp.Tool{Name: name, Description: desc, InputSchema: noArgs}, h}
	}
	return []tool{
		noInput("test_input_required_result_elicitation", "MRTR: asks for the user's name by elicitation", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, ok := elicitedString(req, "user_name", "name")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"user_name": askName}, ""), nil
			}
			return text("Hello, " + name + "!"), nil
		}),
		noInput("test_input_required_result_sampling", "MRTR: asks for a completion by sampling", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			answer, ok := sampled(req, "capital_question")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"capital_question": askCapital}, ""), nil
			}
			return text("LLM response: " + answer), nil
		}),
		noInput("test_input_required_result_list_roots", "MRTR: asks for the client's roots", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			roots, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult)
			if !ok {
				return inputRequired(mcp.InputRequestMap{"client_roots": askRoots}, ""), nil
			}
			var uris []string
			for _, r := range roots.Roots {
				uris = append(uris, r.URI)
			}
			return text("Roots: " + strings.Join(uris, ", ")), nil
		}),
		noInput("test_input_required_result_request_state", "MRTR: round-trips a requestState", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult); !ok || req.Params.RequestState == "" {
				return inputRequired(mcp.InputRequestMap{"confirm": askConfirm}, signState("request-state:1")), nil
			}
			if st, err := openState(req.Params.RequestState); err != nil || st != "request-state:1" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not this tool's"}
			}
			return text("state-ok: the echoed requestState verified"), nil
		}),
		noInput("test_input_required_result_multiple_inputs", "MRTR: asks for elicitation, sampling and roots at once", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := req.Params.InputResponses
			_, e := r["user_name"].(*mcp.ElicitResult)
			_, s := sampled(req, "greeting")
			_, l := r["client_roots"].(*mcp.ListRootsResult)
			if !e || !s || !l || req.Params.RequestState == "" {
				return inputRequired(mcp.InputRequestMap{"user_name": askName, "greeting": askGreeting, "client_roots": askRoots},
					signState("multiple-inputs:1")), nil
			}
			if _, err := openState(req.Params.RequestState); err != nil {
				return nil, err
			}
			return text("Every input answered"), nil
		}),
		noInput("test_input_required_result_multi_round", "MRTR: asks in two rounds", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st := ""
			if req.Params.RequestState != "" {
				var err error
				if st, err = openState(req.Params.RequestState); err != nil {
					return nil, err
				}
			}
			if name, ok := elicitedString(req, "step2", "color"); ok && strings.HasPrefix(st, "multi-round:2:") {
				return text(fmt.Sprintf("Multi-round complete: %s likes %s", strings.TrimPrefix(st, "multi-round:2:"), name)), nil
			}
			if name, ok := elicitedString(req, "step1", "name"); ok && st == "multi-round:1" {
				return inputRequired(mcp.InputRequestMap{"step2": askColor}, signState("multi-round:2:"+name)), nil
			}
			return inputRequired(mcp.InputRequestMap{"step1": askStep1}, signState("multi-round:1")), nil
		}),
		noInput("test_input_required_result_tampered_state", "MRTR: refuses a changed requestState", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState == "" {
				return inputRequired(mcp.InputRequestMap{"confirm": askConfirm}, signState("tamper-test")), nil
			}
			if _, err := openState(req.Params.RequestState); err != nil {
				return nil, err
			}
			if _, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult); !ok {
				return inputRequired(mcp.InputRequestMap{"confirm": askConfirm}, signState("tamper-test")), nil
			}
			return text("integrity-ok: the requestState verified"), nil
		}),
		noInput("test_input_required_result_capabilities", "MRTR: asks only for what the client declared", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				return text(fmt.Sprintf("capabilities-ok: %d answers", len(req.Params.InputResponses))), nil
			}
			caps := req.ClientCapabilities()
			asks := mcp.InputRequestMap{}
			if caps != nil && caps.Elicitation != nil {
				asks["user_name"] = askName
			}
			if caps != nil && caps.Sampling != nil {
				asks["capital_question"] = askCapital
			}
			if len(asks) == 0 {
				return text("capabilities-ok: the client declared neither elicitation nor sampling"), nil
			}
			return inputRequired(asks, ""), nil
		}),
		noInput("test_missing_capability", "Needs the client's sampling capability: -32021 without it", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
				return nil, missingCapability(&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}})
			}
			answer, ok := sampled(req, "capital_question")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"capital_question": askCapital}, ""), nil
			}
			return text("LLM response: " + answer), nil
		}),
		noInput("test_streaming_elicitation", "Elicits in a round (never a request on the call's stream): -32021 without elicitation", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
				return nil, missingCapability(&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}})
			}
			name, ok := elicitedString(req, "user_name", "name")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"user_name": askName}, ""), nil
			}
			return text("Hello, " + name + "!"), nil
		}),
	}
}

func inputRequired(asks mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: asks, RequestState: state}
}

// missingCapability is SEP-2575's -32021 naming caps.
func missingCapability(caps *mcp.ClientCapabilities) error {
	data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: caps})
	if err != nil {
		return err
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this tool needs a client capability the request did not declare", Data: data}
}

// elicitedString is the string field of an accepted elicitation answer
// under key.
func elicitedString(req *mcp.CallToolRequest, key, field string) (string, bool) {
	r, ok := req.Params.InputResponses[key].(*mcp.ElicitResult)
	if !ok || r.Action != "accept" {
		return "", false
	}
	s, _ := r.Content[field].(string)
	return s, true
}

// sampled is the text of a sampling answer under key.
func sampled(req *mcp.CallToolRequest, key string) (string, bool) {
	var content []mcp.Content
	switch r := req.Params.InputResponses[key].(type) {
	case *mcp.CreateMessageWithToolsResult:
		content = r.Content
	case *mcp.CreateMessageResult:
		content = []mcp.Content{r.Content}
	default:
		return "", false
	}
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "", true
}
