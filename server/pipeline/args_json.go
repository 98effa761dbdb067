package pipeline

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry/schema"
)

// Arguments as JSON text (InvokeToolRequest.arguments_json): a model API
// returns a tool call's arguments as a string, and parsing it into a Struct
// on the client rounds a 2^53+1 id before the gateway could refuse it. The
// gateway parses the text itself, with normalize's strict parser, bounded
// by the call's argument limits while it parses; what it builds then goes
// through the stages like any decoded arguments.

// The fields holding arguments as JSON text, as refusals name them.
const (
	// ArgumentsJSONField is InvokeToolRequest.arguments_json.
	ArgumentsJSONField = "arguments_json"
	// MCPArgumentsField is the arguments of MCP's tools/call params.
	MCPArgumentsField = "arguments"
)

// parseJSON parses c.argsJSON once; a refusal is kept for every later ask.
func (c *Call) parseJSON() (*structpb.Struct, error) {
	if c.argsBoth {
		c.decodeErr = &Error{Code: InvalidArgument, Reason: ReasonArgumentsUndecodable, Tool: c.Tool,
			Message: "the request sets both arguments and arguments_json: set one of them"}
		return nil, c.decodeErr
	}
	lim := defaultRepairLimits
	if c.pol != nil {
		lim = c.pol.repairLimits
	}
	s, err := normalize.ParseArguments(c.argsJSON, lim)
	if err != nil {
		c.decodeErr = c.jsonRefusal(err)
		return nil, c.decodeErr
	}
	if c.p != nil {
		c.p.stats.decoded.Add(1)
	}
	c.sent, c.args = s, s
	return s, nil
}

// IsMalformedArguments reports whether e refuses arguments text that is
// not what the parser accepts (not an object, a duplicate key, an inexact
// number, invalid text), as opposed to arguments that parsed and failed a
// check.
func IsMalformedArguments(e *Error) bool {
	var pe *normalize.ParseError
	return e.Kind == KindValidation && errors.As(e.Cause, &pe)
}

// jsonRefusal is the InvalidArgument for text the parser refused: a limit
// as the policy names it, anything else as a violation at its pointer (so
// the gRPC status carries it as a BadRequest field and MCP as a path).
func (c *Call) jsonRefusal(err error) *Error {
	var le *normalize.LimitError
	if errors.As(err, &le) {
		limits := policy.Limits{}.WithDefaults()
		if c.pol != nil {
			limits = c.pol.Limits
		}
		return Classify(limits.Exceeded(c.Tool, repairLimitNames[le.Kind], le.Path, false))
	}
	var pe *normalize.ParseError
	if !errors.As(err, &pe) {
		return Classify(err)
	}
	msg := pe.Describe(c.jsonField)
	// Cause: the parser's refusal, which tells a face the text itself was
	// malformed (MCP answers that with a JSON-RPC error, not a result).
	return &Error{Code: InvalidArgument, Kind: KindValidation, Reason: ReasonArgumentsInvalid, Tool: c.Tool,
		Message:    fmt.Sprintf("tool %q: %s", c.Tool, msg),
		Violations: []schema.Violation{{Pointer: pe.Path, Message: msg}}, Cause: pe}
}

// defaultRepairLimits are the default argument limits as normalize bounds
// a parse, for a call without a policy snapshot.
var defaultRepairLimits = repairLimitsOf(policy.Limits{}.WithDefaults())
