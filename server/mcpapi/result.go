package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"

	"github.com/flowdrop/gateway/internal/mcpcontent"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// callResult is a tools/call result as the gateway writes it. It is the
// gateway's own type, not the SDK's CallToolResult, because what a protocol
// revision requires of a result (2026-07-28's resultType) is set by the
// SDK only in its own tool handler, which tools/call never reaches
// (server.go, "Design"); here the face sets it from the revision the
// request was made under (revision.go).
type callResult struct {
	mcp.ResultBase
	Content           []mcp.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
	// ResultType: "complete" from 2026-07-28 on; absent before it;
	// "input_required" on a round that asks its caller for input
	// (input.go), with InputRequests (the upstream's, as relayed) and the
	// gateway's sealed RequestState.
	ResultType    string          `json:"resultType,omitempty"`
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	RequestState  string          `json:"requestState,omitempty"`
}

// callError is THE one place a pipeline error becomes an MCP outcome.
//
// MCP separates tool execution errors (a result with isError: true, which
// the model reads and can act on) from protocol errors (a JSON-RPC error,
// for the client, not the model). The rule: if the model can do something
// about it — change the arguments, wait, try later or another way — it is
// an isError result; if the call could never have been made (no such tool,
// a tool this caller is not offered, a call id no call can have, no right
// to call tools, a cancelled request, our own bug) it is a JSON-RPC error.
// Which one a reason gets is its row's (pipeline.ReasonSpec.MCP), the table
// the gRPC face and the audit log read too; this function only words the
// answer:
//
//   - malformed arguments text (the strict parser's refusal: not an object,
//     a duplicate key, an inexact number, invalid UTF-8 or an unpaired
//     surrogate) → invalid params naming the path, whatever the row says.
//   - invalid arguments → isError: the violations with their pointers, and
//     the repairs made before validation.
//   - unknown tool → "unknown tool" (the MCP spec's example).
//   - backend failures: unreachable/overloaded and deadline get a message
//     that names the tool and the budget but not the backend's address; any
//     other status the backend returned is its own message, passed on as
//     gRPC does.
//   - a reason a later retry may help (rate and in-flight limits,
//     idempotency in progress or store unavailable) → the wait is appended;
//     fail-closed audit's message already says to try later.
//   - an internal error is logged, never sent: "internal error".
func (m *Server) callError(ctx context.Context, e *pipeline.Error, report normalize.Report) (*callResult, error) {
	if pipeline.IsMalformedArguments(e) {
		// Arguments text the parser refused (not an object, a duplicate
		// key, an inexact number, invalid text) keeps its reason
		// (arguments-invalid, as gRPC's arguments_json) but is malformed
		// params to MCP, as it was when the face parsed it itself: the
		// client sent what no tool call can be.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message}
	}
	switch e.Spec().MCP {
	case pipeline.MCPPermissionDenied:
		return nil, &jsonrpc.Error{Code: MCPCodePermissionDenied, Message: e.Message}
	case pipeline.MCPInvalidParams:
		msg := e.Message
		if e.Reason == pipeline.ReasonToolNotFound {
			msg = fmt.Sprintf("unknown tool %q", e.Tool)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	case pipeline.MCPCanceled:
		return nil, context.Canceled
	case pipeline.MCPDeadline:
		return nil, context.DeadlineExceeded
	case pipeline.MCPMissingCapability:
		if len(e.Required) == 0 {
			// A caller before 2026-07-28: no capability would help, the
			// revision would; the model reads why.
			return toolError(e, report), nil
		}
		return nil, missingCapability(e)
	case pipeline.MCPToolError:
		return toolError(e, report), nil
	case pipeline.MCPURLElicitation:
		if e.AuthorizationURL != "" && urlElicitationFrom(ctx) {
			return nil, urlElicitationRequired(e)
		}
		// A caller that cannot be sent a URL elicitation reads the URL in
		// the message; _meta has it for a client that looks.
		r := toolError(e, report)
		r.Meta[MCPMetaAuthorizationURL] = e.AuthorizationURL
		return r, nil
	}
	m.log.ErrorContext(ctx, "MCP tools/call failed", "tool", policy.Bound(e.Tool), "error", e.Error())
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// toolError is the isError result of e, worded for the model.
func toolError(e *pipeline.Error, report normalize.Report) *callResult {
	tool := e.Tool
	switch {
	case e.Kind == pipeline.KindValidation:
		var b strings.Builder
		b.WriteString(e.Message)
		viol := make([]map[string]any, 0, len(e.Violations))
		for _, v := range e.Violations {
			ptr := v.Pointer
			if ptr == "" {
				ptr = "(root)"
			}
			fmt.Fprintf(&b, "\n- at %s: %s", ptr, v.Message)
			viol = append(viol, map[string]any{"path": v.Pointer, "message": v.Message})
		}
		r := errorResult(b.String(), string(pipeline.ReasonArgumentsInvalid), report)
		r.Meta[MCPMetaViolations] = viol
		return r
	case e.Reason == pipeline.ReasonBackendDeadline:
		return errorResult(fmt.Sprintf("tool %q did not answer within %v (%s); it may be slow or stuck: try again later or another way",
			tool, e.Timeout.Round(time.Millisecond), e.DeadlineSource), string(e.Reason), report)
	case e.Reason == pipeline.ReasonBackendUnavailable:
		return errorResult(fmt.Sprintf("tool %q is unavailable right now; try again later", tool), string(e.Reason), report)
	case e.Reason == pipeline.ReasonBackendError:
		return errorResult(fmt.Sprintf("tool %q failed: %s: %s", tool, e.Code, e.Message), string(e.Reason), report)
	case e.Reason == pipeline.ReasonAuditUnavailable:
		return errorResult(e.Message, string(e.Reason), report)
	}
	msg := e.Message
	if d := e.RetryWait(); d > 0 {
		msg += fmt.Sprintf(" (retry after %v)", d.Round(time.Millisecond))
	}
	return errorResult(msg, string(e.Reason), report)
}

// errorResult is an isError result whose text is msg followed by the repairs
// (so a model that reads only the text still learns them).
func errorResult(msg, reason string, report normalize.Report) *callResult {
	if len(report.Repairs) > 0 {
		msg += "\nThe gateway repaired these arguments before checking them: " + describeRepairs(report.Repairs)
	}
	r := &callResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}},
		ResultBase: mcp.ResultBase{Meta: mcp.Meta{MCPMetaReason: reason}}}
	if rs := repairsMeta(report.Repairs); rs != nil {
		r.Meta[MCPMetaRepairs] = rs
	}
	return r
}

// toolResult maps the backend's answer. An answer in MCP's content model
// (content blocks) passes as it came: its blocks, its structured content,
// its _meta. A value alone becomes one TextContent (a string as itself,
// anything else as JSON) and structuredContent when it is an object.
// isError is the backend's; the repairs and the replay mark join _meta.
func toolResult(res pipeline.Result, report normalize.Report) (*callResult, error) {
	var (
		blocks []*gatewayv1.ContentBlock
		meta   *structpb.Struct
	)
	if res.Encoded != nil {
		// The backend kind's own message when it kept it (the same
		// answer, not decoded again), else the bytes decoded.
		ir, kept := res.Decoded.(*gatewayv1.InvokeResponse)
		if !kept || ir == nil {
			ir = new(gatewayv1.InvokeResponse)
			if err := proto.Unmarshal(res.Encoded, ir); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
			}
		}
		res.Value, res.IsError = ir.GetResult(), ir.GetIsError()
		blocks, meta = ir.GetContent(), ir.GetMeta()
	}
	r := &callResult{IsError: res.IsError, Content: []mcp.Content{}}
	if len(blocks) > 0 {
		// An answer in MCP's content model (an upstream MCP server's):
		// its blocks as sent, and its structured content beside them.
		content, err := mcpcontent.ToMCP(blocks)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
		r.Content = content
		if res.Value.GetStructValue() != nil {
			r.StructuredContent = json.RawMessage(valueJSON(res.Value))
		}
	} else if v := res.Value; v != nil {
		text := v.GetStringValue()
		if _, isString := v.GetKind().(*structpb.Value_StringValue); !isString {
			text = valueJSON(v)
		}
		r.Content = append(r.Content, &mcp.TextContent{Text: text})
		if s := v.GetStructValue(); s != nil {
			r.StructuredContent = json.RawMessage(valueJSON(v))
		}
	}
	// The backend's _meta first; the gateway's keys are its own to set.
	for k, v := range meta.AsMap() {
		if !mcpcontent.Reserved(k) {
			if r.Meta == nil {
				r.Meta = mcp.Meta{}
			}
			r.Meta[k] = v
		}
	}
	if rs := repairsMeta(report.Repairs); rs != nil {
		if r.Meta == nil {
			r.Meta = mcp.Meta{}
		}
		r.Meta[MCPMetaRepairs] = rs
	}
	if res.Replayed {
		if r.Meta == nil {
			r.Meta = mcp.Meta{}
		}
		r.Meta[MCPMetaReplayed] = true
	}
	return r, nil
}

// valueJSON renders v as compact JSON without HTML escaping (the text is for
// a model, and "&" must stay "&"). protojson is not used: its output spacing
// is deliberately unstable.
func valueJSON(v *structpb.Value) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.AsInterface()); err != nil {
		// Only NaN or ±Inf numbers, which JSON cannot carry.
		raw, _ := v.MarshalJSON()
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func repairsMeta(rs []normalize.Repair) []map[string]any {
	if len(rs) == 0 {
		return nil
	}
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		m := map[string]any{"path": r.Path, "kind": r.Kind.String()}
		if r.Kind == normalize.EntitiesDecoded {
			m["passes"] = r.Passes
			if r.BoundHit {
				m["boundHit"] = true
			}
		}
		out[i] = m
	}
	return out
}

func describeRepairs(rs []normalize.Repair) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		what := "decoded a JSON string into its value"
		switch r.Kind {
		case normalize.EntitiesDecoded:
			what = "decoded HTML entities"
		case normalize.NullDropped:
			what = "removed a null sent for an optional property, as if not given"
		}
		path := r.Path
		if path == "" {
			path = "(root)"
		}
		parts[i] = path + " (" + what + ")"
	}
	return strings.Join(parts, "; ")
}
