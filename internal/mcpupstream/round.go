package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Rounds reports whether the gateway sends the session's requests itself
// (Request), so an upstream's InputRequiredResult (MCP 2026-07-28,
// SEP-2322) reaches it as the upstream wrote it: through the SDK its
// client's multi round-trip middleware would fulfil the requests with the
// session's handlers (which refuse) instead.
func (c *Caller) Rounds() bool { return !c.sdk }

// Request sends method (prompts/get, resources/read: a request that may be
// answered with an InputRequiredResult) with params on the session and
// decodes its result into out (the SDK's result type, whose UnmarshalJSON
// keeps resultType). The request's _meta is what the SDK's would be, its
// clientCapabilities what the session declared narrowed to what the call's
// caller can answer (WithCallerInput, as for tools/call); params' own _meta
// keys are kept beside it. name is the Mcp-Name header (the prompt's name,
// the resource's URI). A retry adds its inputResponses and requestState,
// as CallToolRound's does. Errors are CallToolRound's.
func (c *Caller) Request(ctx context.Context, method, name string, params mcp.Params, retry *Retry, out any) error {
	if c.sdk {
		return errors.New("a request of the gateway's own cannot be sent on a session through the SDK")
	}
	if meta := c.metaFor(ctx); meta != nil {
		var m mcp.Meta
		if err := json.Unmarshal(meta, &m); err != nil {
			return err
		}
		caps := m[mcp.MetaKeyClientCapabilities]
		maps.Copy(m, params.GetMeta())
		m[mcp.MetaKeyClientCapabilities] = caps // the caller's say, never params'
		params.SetMeta(m)
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	id := "flowdrop-" + strconv.FormatUint(c.ids.Add(1), 10)
	qmethod, _ := json.Marshal(method)
	body := getBuffer()
	defer putBuffer(body)
	body.WriteString(`{"jsonrpc":"2.0","id":"`)
	body.WriteString(id)
	body.WriteString(`","method":`)
	body.Write(qmethod)
	body.WriteString(`,"params":`)
	if retry != nil && len(p) > 2 && p[len(p)-1] == '}' {
		// params encode as an object with at least its name or URI.
		body.Write(p[:len(p)-1])
		if len(retry.Responses) > 0 {
			body.WriteString(`,"inputResponses":`)
			body.Write(retry.Responses)
		}
		if retry.State != "" {
			st, err := json.Marshal(retry.State)
			if err != nil {
				return err
			}
			body.WriteString(`,"requestState":`)
			body.Write(st)
		}
		body.WriteString(`}`)
	} else {
		body.Write(p)
	}
	body.WriteString(`}`)
	ans, err := c.exchange(ctx, id, method, name, c.Session.ID(), body.Bytes(), nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(ans.Result, out)
}

// NoInputMeta is a request's _meta on cs declaring no input (from MCP
// 2026-07-28 on; meta as it is before), as DeclaringNoRounds does for a
// tools/call: a session through the SDK carries no rounds.
func NoInputMeta(cs *mcp.ClientSession, meta mcp.Meta) mcp.Meta {
	r := cs.InitializeResult()
	if r == nil || r.ProtocolVersion < revisionRequestMeta {
		return meta
	}
	out := mcp.Meta{}
	maps.Copy(out, meta)
	out[mcp.MetaKeyClientCapabilities] = noInputCapabilities
	return out
}
