package mcpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/sealedstate"
)

// TestInputRoundState: the face opens a retry's sealed state and holds it
// to the clock, the caller and the tool; each refusal is invalid params
// saying why, and a good state yields the round that follows it.
func TestInputRoundState(t *testing.T) {
	t.Parallel()
	keys := sealedstate.Random()
	m := &Server{input: func() InputState { return InputState{Keys: keys} }}
	seal := func(rs roundState) string {
		b, err := json.Marshal(rs)
		if err != nil {
			t.Fatal(err)
		}
		return keys.Seal(roundPurpose, b)
	}
	alice := policy.Caller{Subject: "alice", Method: policy.MethodAPIKey}
	good := roundState{Tool: "up.ask", Upstream: "http://u", UpstreamTool: "ask", State: "s", Subject: "alice", Method: policy.MethodAPIKey,
		Round: 1, Expires: time.Now().Add(time.Hour).Unix()}
	expired := good
	expired.Expires = time.Now().Add(-time.Minute).Unix()
	viaJWT := good
	viaJWT.Method = policy.MethodJWT
	forPrompt := good
	forPrompt.Request = "prompts/get"
	answers := mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "decline"}}
	rows := []struct {
		reason string
		state  string
		resp   mcp.InputResponseMap
		want   string // "" : accepted
	}{
		{"a state sealed for this caller and tool, in time, is the next round", seal(good), answers, ""},
		{"an expired state is refused, naming when it expired", seal(expired), answers, "requestState expired at"},
		{"the same subject authenticated another way is another caller", seal(viaJWT), answers, "issued to another caller"},
		{"a state sealed under another key is not one this gateway issued", sealedstate.Random().Seal(roundPurpose, []byte(`{}`)), answers, "not one this gateway issued"},
		{"a state sealed for another purpose is not one this gateway issued", keys.Seal("other", []byte(`{}`)), answers, "not one this gateway issued"},
		{"an oversized state is refused before it is opened", strings.Repeat("A", maxSealedState+1), answers, "not one this gateway issued"},
		{"answers without a state", "", answers, "without the requestState"},
		{"a prompts/get round's state, for a prompt named as the tool, is another request's", seal(forPrompt), answers, "another request than tools/call"},
	}
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			ctx := policy.WithCaller(t.Context(), alice)
			r, err := m.inputRound(ctx, &mcp.CallToolParamsRaw{Name: "up.ask", RequestState: row.state, InputResponses: row.resp})
			if row.want == "" {
				if err != nil || r.Round != 2 || r.State != "s" || r.Upstream != "http://u" || r.UpstreamTool != "ask" || r.Answered != 1 {
					t.Fatalf("got %+v, %v; want round 2 carrying the upstream's state", r, err)
				}
				return
			}
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, row.want) {
				t.Fatalf("got %+v, %v; want invalid params saying %q", r, err, row.want)
			}
		})
	}
}
