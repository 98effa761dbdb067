package mcpimport

import (
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/toolproto"
	"github.com/flowdrop/gateway/registry"
)

// Definition is what an upstream tool defines of its gateway tool (its
// description, input and output schemas and annotations), as Tools
// imports it.
func Definition(u *mcp.Tool) (registry.Definition, error) {
	in, err := inputSchema(u.InputSchema)
	if err != nil {
		return registry.Definition{}, err
	}
	d := registry.Definition{Description: u.Description, InputSchema: in, Annotations: toolproto.AnnotationsFromProto(annotations(u.Annotations))}
	if u.OutputSchema != nil {
		if d.OutputSchema, err = inputSchema(u.OutputSchema); err != nil {
			return registry.Definition{}, errors.New(strings.Replace(err.Error(), "input schema", "output schema", 1))
		}
	}
	return d, nil
}
