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

// ArgumentsJSONField names the field in refusals.
const ArgumentsJSONField = "arguments_json"

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
	msg := pe.Describe(ArgumentsJSONField)
	return &Error{Code: InvalidArgument, Kind: KindValidation, Reason: ReasonArgumentsInvalid, Tool: c.Tool,
		Message:    fmt.Sprintf("tool %q: %s", c.Tool, msg),
		Violations: []schema.Violation{{Pointer: pe.Path, Message: msg}}}
}

// defaultRepairLimits are the default argument limits as normalize bounds
// a parse, for a call without a policy snapshot.
var defaultRepairLimits = repairLimitsOf(policy.Limits{}.WithDefaults())
