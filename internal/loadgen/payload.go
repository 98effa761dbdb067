package loadgen

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// BenchTool is the tool name the benchmark registers and calls.
const BenchTool = "bench_tool"

// Payload kinds.
const (
	PayloadClean  = "clean"  // needs no repair
	PayloadRepair = "repair" // a stringified array and a doubly-escaped title
)

// description pads the clean payload to about 1 KiB on the wire, the size
// the reference numbers were measured with.
var description = strings.Repeat("Rotate the staging credentials, re-run the smoke suite and post the summary in the release channel. ", 6)

// Arguments returns the benchmark's 10-parameter arguments: strings,
// numbers, booleans, a list of strings and a nested object. The clean kind
// needs no repair under RT-TOOL-8; the repair kind needs two (labels arrives
// as a JSON string, title HTML-escaped twice).
func Arguments(kind string) (*structpb.Struct, error) {
	labels := []any{"ops", "release", "staging", "credentials", "weekly"}
	title := "Ember & Oak: rotate staging credentials"
	switch kind {
	case PayloadClean:
	case PayloadRepair:
		title = "Ember &amp;amp; Oak: rotate staging credentials"
	default:
		return nil, fmt.Errorf("unknown payload %q (want %q or %q)", kind, PayloadClean, PayloadRepair)
	}
	m := map[string]any{
		"title":          title,
		"description":    description,
		"priority":       3.0,
		"estimate_hours": 2.5,
		"urgent":         false,
		"notify_owner":   true,
		"labels":         labels,
		"assignee": map[string]any{
			"name":  "Robin Okafor",
			"email": "robin.okafor@example.com",
			"team":  "platform",
		},
		"due_date": "2026-12-18",
		"project":  "flowdrop-infra",
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, err
	}
	if kind == PayloadRepair {
		s.Fields["labels"] = structpb.NewStringValue(`["ops","release","staging","credentials","weekly"]`)
	}
	return s, nil
}

// MCPArguments is a payload kind's arguments as the JSON object an MCP
// tools/call carries (~920 bytes for the clean kind).
func MCPArguments(kind string) (json.RawMessage, error) {
	args, err := Arguments(kind)
	if err != nil {
		return nil, err
	}
	return json.Marshal(args.AsMap())
}

// BackendResult is the result Backend answers every call with; over the
// gateway's MCP face it is the answer's text, as JSON.
func BackendResult() map[string]any {
	return map[string]any{"status": "ok", "task_id": "T-1042"}
}

// RequestBytes is the marshalled InvokeToolRequest for a payload kind. The
// same bytes are a valid InvokeRequest (fields 1–3 are wire-identical), so
// every target is sent exactly these bytes.
func RequestBytes(kind string) ([]byte, error) {
	args, err := Arguments(kind)
	if err != nil {
		return nil, err
	}
	// Deterministic so the payload is byte-for-byte the same in every run.
	return proto.MarshalOptions{Deterministic: true}.Marshal(&gatewayv1.InvokeToolRequest{
		Tool:      BenchTool,
		Arguments: args,
		CallId:    "call_bench_0001",
	})
}

// BenchToolSchema is the input JSON Schema that matches Arguments: every
// parameter declared, so the clean payload validates and the repair payload
// validates only after normalization.
func BenchToolSchema() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title":          map[string]any{"type": "string", "maxLength": 200},
			"description":    map[string]any{"type": "string"},
			"priority":       map[string]any{"type": "integer", "minimum": 1, "maximum": 5},
			"estimate_hours": map[string]any{"type": "number", "minimum": 0},
			"urgent":         map[string]any{"type": "boolean"},
			"notify_owner":   map[string]any{"type": "boolean"},
			"labels":         map[string]any{"type": "array", "items": str, "maxItems": 20},
			"assignee": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":  str,
					"email": str,
					"team":  str,
				},
				"required":             []any{"name", "email"},
				"additionalProperties": false,
			},
			"due_date": map[string]any{"type": "string", "pattern": `^\d{4}-\d{2}-\d{2}$`},
			"project":  str,
		},
		"required":             []any{"title", "priority", "labels", "assignee"},
		"additionalProperties": false,
	}
}
