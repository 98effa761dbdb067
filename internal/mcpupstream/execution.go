package mcpupstream

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk v1.8.0's Tool has no execution, so its client drops a tool's
// execution.taskSupport from every listing. Over stdio there is no raw
// listing to read instead (ToolTaskSupport's, over HTTP): the session's
// one connection is the SDK's. So the connection is read through
// (executionConn), and each tools/list page that passes is told, as it
// is, to ConnectOptions.OnToolExecution.

// executionTransport is t with its connection read through.
type executionTransport struct {
	t    mcp.Transport
	tell func(map[string]string)
}

func (e executionTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := e.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return executionConn{Connection: c, tell: e.tell}, nil
}

// executionConn tells tell the execution.taskSupport of each tool of a
// tools/list page it reads ("optional", "required"; "" for a tool that
// says nothing or "forbidden").
type executionConn struct {
	mcp.Connection
	tell func(map[string]string)
}

func (c executionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Error == nil && bytes.Contains(resp.Result, []byte(`"tools"`)) {
		var page struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution *struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
		}
		if json.Unmarshal(resp.Result, &page) == nil && page.Tools != nil {
			out := map[string]string{}
			for _, t := range page.Tools {
				out[t.Name] = ""
				if t.Execution == nil {
					continue
				}
				switch ts := t.Execution.TaskSupport; ts {
				case "optional", "required":
					out[t.Name] = ts
				}
			}
			c.tell(out)
		}
	}
	return msg, err
}
