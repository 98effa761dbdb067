package mcpapi

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/server/pipeline"
)

// A caller's tools/call that carries _meta.progressToken gets its
// backend's progress (pipeline.ProgressSink: bounded, each value once) as
// notifications/progress for that token, on the call's response stream
// before the result. Without a token the call gets no sink, and its
// backend asks its upstream for no progress.

// progressParams is the notification for the caller's token.
func progressParams(token any, p pipeline.Progress) *mcp.ProgressNotificationParams {
	return &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message}
}

// fastProgress writes a fast-path call's progress as SSE "message" events
// on its response stream (shared with relayed requests, relay.go), each
// flushed, committing the stream's headers at the first (the result then
// follows on the same stream).
type fastProgress struct {
	stream *sseStream
	token  any
}

func (f *fastProgress) emit(p pipeline.Progress) {
	params, err := json.Marshal(progressParams(f.token, p))
	if err != nil {
		return
	}
	f.stream.write(&jsonrpc.Request{Method: "notifications/progress", Params: params})
}

// sdkProgressSink is the SDK path's sink: the request's session sends the
// notification in the request's context (sdkCtx, with the SDK's values),
// which its stateless streamable handler writes on the request's stream.
func sdkProgressSink(sdkCtx context.Context, req *mcp.CallToolRequest) *pipeline.ProgressSink {
	if req.Session == nil || req.Params == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return pipeline.NewProgressSink(func(p pipeline.Progress) {
		_ = req.Session.NotifyProgress(sdkCtx, progressParams(token, p))
	})
}
