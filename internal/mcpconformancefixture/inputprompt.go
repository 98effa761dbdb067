package mcpconformancefixture

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The prompt of the suite's input-required-result-non-tool-request
// scenario (MCP 2026-07-28, SEP-2322): prompts/get asks for the prompt's
// context by elicitation with an InputRequiredResult, and answers the
// retry that carries it with the prompt.

// InputPrompt is the scenario's prompt.
const InputPrompt = "test_input_required_result_prompt"

// askContext is the scenario's input request.
var askContext = &mcp.ElicitParams{Message: "What context should the prompt use?",
	RequestedSchema: json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`)}

// addInputPrompt adds the prompt to s.
func addInputPrompt(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: InputPrompt, Description: "MRTR: asks for the prompt's context by elicitation"},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			res, ok := r.Params.InputResponses["user_context"].(*mcp.ElicitResult)
			var got string
			if ok && res.Action == "accept" {
				got, _ = res.Content["context"].(string)
			}
			if got == "" {
				return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": askContext}}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Use this context: " + got}}}}, nil
		})
}
