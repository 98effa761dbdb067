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

// parseJSON parses the text once, within pol's limits (the defaults
// without a policy); a refusal is kept for every later ask.
func (a *Arguments) parseJSON(tool string, pol *Policy) (*structpb.Struct, error) {
	if a.alsoStruct {
		a.err = &Error{Code: InvalidArgument, Reason: ReasonArgumentsUndecodable, Tool: tool,
			Message: "the request sets both arguments and arguments_json: set one of them"}
		return nil, a.err
	}
	lim := defaultRepairLimits
	if pol != nil {
		lim = pol.repairLimits
	}
	s, err := normalize.ParseArguments(a.text, lim)
	if err != nil {
		a.err = a.jsonRefusal(tool, pol, err)
		return nil, a.err
	}
	a.countDecode()
	a.sent, a.fwd = s, s
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
func (a *Arguments) jsonRefusal(tool string, pol *Policy, err error) *Error {
	var le *normalize.LimitError
	if errors.As(err, &le) {
		limits := policy.Limits{}.WithDefaults()
		if pol != nil {
			limits = pol.Limits
		}
		return Classify(limits.Exceeded(tool, repairLimitNames[le.Kind], le.Path, false))
	}
	var pe *normalize.ParseError
	if !errors.As(err, &pe) {
		return Classify(err)
	}
	msg := pe.Describe(a.textField)
	// Cause: the parser's refusal, which tells a face the text itself was
	// malformed (MCP answers that with a JSON-RPC error, not a result).
	return &Error{Code: InvalidArgument, Kind: KindValidation, Reason: ReasonArgumentsInvalid, Tool: tool,
		Message:    fmt.Sprintf("tool %q: %s", tool, msg),
		Violations: []schema.Violation{{Pointer: pe.Path, Message: msg, Keyword: "json"}}, Cause: pe}
}

// defaultRepairLimits are the default argument limits as normalize bounds
// a parse, for a call without a policy snapshot.
var defaultRepairLimits = repairLimitsOf(policy.Limits{}.WithDefaults())
