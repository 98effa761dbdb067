package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Exit codes, the same for every command (docs/agents.md, "As a gRPC service"):
const (
	exitOK    = 0 // done
	exitCall  = 1 // the call failed (the gRPC code is printed; in JSON, in "error")
	exitUsage = 2 // bad usage or input; nothing was sent
)

// output is --output: text for people (the default), json for scripts.
// With json, stdout holds exactly one JSON document (JSON lines for
// `tools watch`), failures included; diagnostics go to stderr.
type output struct{ json bool }

// addOutputFlag defines --output on fs.
func addOutputFlag(fs *flag.FlagSet) *output {
	o := &output{}
	fs.Func("output", "text (default) or json: one JSON document on stdout (JSON lines for watch), failures included", func(v string) error {
		switch v {
		case "text":
			o.json = false
		case "json":
			o.json = true
		default:
			return fmt.Errorf("want text or json, got %q", v)
		}
		return nil
	})
	return o
}

// protoJSON renders messages with the field names of the tools file
// (input_schema, not inputSchema), re-indented: protojson's own whitespace
// is deliberately unstable.
func protoJSON(m proto.Message) (json.RawMessage, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

// writeJSON writes v as one indented JSON document and a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// writeJSONLine writes v as one compact JSON line (for streams).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// callError is a failed call in JSON: the gRPC code's name, the message,
// and the status details as protojson (ErrorInfo, BadRequest, RetryInfo…).
type callError struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Details []json.RawMessage `json:"details,omitempty"`
}

func newCallError(err error) *callError {
	st := status.Convert(err)
	e := &callError{Code: st.Code().String(), Message: st.Message()}
	for _, d := range st.Proto().GetDetails() {
		if b, err := protojson.Marshal(d); err == nil {
			e.Details = append(e.Details, b)
		}
	}
	return e
}

// writeJSONError writes {"error": ...} for err and returns exitCall.
func writeJSONError(w io.Writer, err error) int {
	writeJSON(w, map[string]any{"error": newCallError(err)})
	return exitCall
}
