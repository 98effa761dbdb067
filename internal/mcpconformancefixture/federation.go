package mcpconformancefixture

// The resources, resource template, prompts and completions the suite's
// resources-*, prompts-*, completion-complete and caching scenarios read
// (the suite's everything server's), served beside the tools so that a
// gateway importing the fixture without a prefix federates them under
// these very URIs and names (server/mcpapi/federation.go).

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Contents the scenarios look for.
const (
	StaticTextURI  = "test://static-text"
	StaticText     = "This is the content of the static text resource."
	StaticBlobURI  = "test://static-binary"
	WatchedURI     = "test://watched-resource"
	TemplateURI    = "test://template/{id}/data"
	SimplePrompt   = "test_simple_prompt"
	ArgsPrompt     = "test_prompt_with_arguments"
	EmbedPrompt    = "test_prompt_with_embedded_resource"
	ImagePrompt    = "test_prompt_with_image"
	embeddedPrompt = "Embedded resource content for testing."
)

// withFederation adds to o the handlers the scenarios need beside the
// items (subscriptions, completions).
func withFederation(o *mcp.ServerOptions) *mcp.ServerOptions {
	o.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
	o.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	o.CompletionHandler = complete
	return o
}

// addFederation adds the resources, template and prompts to s.
func addFederation(s *mcp.Server) {
	text := func(uri, mime, body string) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: body}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: StaticTextURI, Name: "static-text", Description: "A static text resource for testing", MIMEType: "text/plain"},
		text(StaticTextURI, "text/plain", StaticText))
	s.AddResource(&mcp.Resource{URI: StaticBlobURI, Name: "static-binary", Description: "A static binary resource (image) for testing", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: StaticBlobURI, MIMEType: "image/png", Blob: mustDecode(imagePNGBase64)}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: WatchedURI, Name: "watched-resource", Description: "A resource that can be subscribed to", MIMEType: "text/plain"},
		text(WatchedURI, "text/plain", "Watched resource content"))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TemplateURI, Name: "template", Description: "A resource template with parameter substitution", MIMEType: "application/json"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, okPrefix := strings.CutPrefix(r.Params.URI, "test://template/")
			id, okSuffix := strings.CutSuffix(id, "/data")
			if !okPrefix || !okSuffix || id == "" || strings.Contains(id, "/") {
				return nil, mcp.ResourceNotFoundError(r.Params.URI)
			}
			body := fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json", Text: body}}}, nil
		})

	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(&mcp.Prompt{Name: SimplePrompt, Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: ArgsPrompt, Description: "A prompt with required arguments", Arguments: []*mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := r.Params.Arguments
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: EmbedPrompt, Description: "A prompt that includes an embedded resource", Arguments: []*mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: r.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: embeddedPrompt}}),
				user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: ImagePrompt, Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: mustDecode(imagePNGBase64), MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
}

// completionValues are what complete suggests from, by prefix.
var completionValues = []string{"paris", "park", "party", "test", "testValue1", "testValue2"}

// complete suggests completionValues starting with the argument's value,
// for any prompt or template argument (the scenario needs the shape only).
func complete(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	out := []string{}
	for _, v := range completionValues {
		if strings.HasPrefix(v, r.Params.Argument.Value) {
			out = append(out, v)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: out, Total: len(out)}}, nil
}
