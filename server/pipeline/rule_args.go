package pipeline

import (
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/structwire"
	"google.golang.org/protobuf/types/known/structpb"
)

// ruleArgs is what the CEL rules judge: the call's arguments, or — when
// they are still the received bytes, which the wire validator proved well
// formed (valid UTF-8, one kind per Value, no unknown fields), and the
// rules read only named members of args — a Struct of just those members,
// decoded from the bytes. The rules' result is the same either way
// (policy.Rules.ArgFields); the call's arguments stay undecoded, so
// nothing decodes them whole (the audit line encodes from the bytes too).
func (p *Pipeline) ruleArgs(c *Call, rules *policy.Rules) (*structpb.Struct, error) {
	b, ok := c.args.WireChecked()
	if !ok || c.validation != "ok" {
		return c.Args()
	}
	names, ok := rules.ArgFields(c.Tool)
	if !ok {
		return c.Args()
	}
	picked, ok := structwire.DecodeMembers(b, names) // else a picked member needs the general decoder
	if !ok {
		return c.Args()
	}
	return picked, nil
}
