package pipeline

import (
	"context"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
)

// Preview is what the normalize and validate stages make of one set of
// arguments under the policy in force, computed without a call: no
// caller, no authorization, rules or rate limits, no backend, no audit
// line (the admin console's try-it panel).
type Preview struct {
	// Sent are the arguments as parsed (nil when the text did not parse).
	Sent *structpb.Struct
	// Normalized are the arguments the backend would receive (nil when
	// refused before normalization finished).
	Normalized *structpb.Struct
	Report     normalize.Report
	// Refusal is what the call would be refused with at these stages (nil:
	// the arguments pass them).
	Refusal *Error
}

// Preview parses text as a call's arguments_json and runs the normalize
// stage (RT-TOOL-8, then the policy's optional-null dropping and entity
// bound) and the validate stage on e, as a call to e's tool would, within
// the policy's argument limits and validation step bound.
func (p *Pipeline) Preview(ctx context.Context, e *registry.Entry, text string) Preview {
	pol := p.Policy()
	if pol == nil { // a pipeline built without a policy: its defaults
		pol = &Policy{repairLimits: defaultRepairLimits}
	}
	tool := e.Tool.Name
	a := Arguments{text: text, textField: ArgumentsJSONField}
	sent, err := a.parseJSON(tool, pol)
	if err != nil {
		return Preview{Refusal: Classify(err)}
	}
	out, rep, err := e.Plan.ApplyWithin(sent, pol.repairLimits)
	pv := Preview{Sent: sent, Report: rep}
	if err != nil {
		c := &Call{Tool: tool, pol: pol}
		pv.Refusal = Classify(p.repairRefusal(c, err))
		return pv
	}
	if pol.OptionalNulls.Drop(tool) {
		var dropped []normalize.Repair
		out, dropped = e.Schema.DropOptionalNulls(out)
		pv.Report.Repairs = append(pv.Report.Repairs, dropped...)
	}
	pv.Normalized = out
	c := &Call{Tool: tool, pol: pol, Report: pv.Report}
	if !pol.ForwardEntityBound {
		if err := refuseEntityBound(c); err != nil {
			pv.Refusal = Classify(err)
			return pv
		}
	}
	if err := e.ValidateWithin(ctx, out, &pv.Report, pol.Limits.MaxValidationSteps); err != nil {
		pv.Refusal = Classify(p.validationBudget(c, err))
	}
	return pv
}
