package pipeline_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestPreview: Preview answers what the normalize and validate stages
// make of arguments text under the pipeline's policy — repairs, the
// policy's optional-null dropping, limits and entity bound, the refusal —
// and never reaches the backend.
func TestPreview(t *testing.T) {
	t.Parallel()
	reg := demoRegistry(t)
	deep := "x"
	for range 12 {
		deep = strings.ReplaceAll("&amp;"+deep, "&", "&amp;")
	}
	drop := optionalNulls(t, policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop})
	for _, c := range []struct {
		name, reason string
		cfg          func(*pipeline.Config)
		text         string
		refusal      pipeline.Reason // the refusal's reason ("": none)
		repairs      []string
		title        string // the normalized title, when not refused before normalization ended
	}{
		{"repaired", "a stringified array and a twice-escaped title are repaired, then valid", nil,
			`{"title":"A &amp;amp; B","tags":"[\"x\"]"}`, "", []string{"json-decoded /tags", "entities-decoded /title"}, "A & B"},
		{"invalid", "the schema's minLength", nil, `{"title":""}`, pipeline.ReasonArgumentsInvalid, nil, ""},
		{"malformed", "the strict parser: not an object", nil, `[1]`, pipeline.ReasonArgumentsInvalid, nil, ""},
		{"null-kept", "without the policy's drop a null for an optional string is invalid", nil,
			`{"title":"a","body":null}`, pipeline.ReasonArgumentsInvalid, nil, "a"},
		{"null-dropped", "the policy drops it and reports the repair", func(c *pipeline.Config) { c.OptionalNulls = drop },
			`{"title":"a","body":null}`, "", []string{"null-dropped /body"}, "a"},
		{"limit", "the policy's max_string_length while parsing", func(c *pipeline.Config) { c.Limits = policy.Limits{MaxStringLength: 4} },
			`{"title":"too long"}`, pipeline.Reason(policy.ReasonLimitStringLength), nil, ""},
		{"entity-bound", "still escaped at the pass bound: refused", nil, `{"title":"` + deep + `"}`, pipeline.ReasonEntityBound, nil, ""},
		{"entity-forward", "the policy forwards it instead", func(c *pipeline.Config) { c.ForwardEntityBound = true },
			`{"title":"` + deep + `"}`, "", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			be := &echoBackend{}
			cfg := pipeline.Config{Registry: reg, Backend: be}
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			p := pipeline.New(cfg)
			e, _ := reg.Lookup("create_note")
			pv := p.Preview(t.Context(), e, c.text)
			var got pipeline.Reason
			if pv.Refusal != nil {
				got = pv.Refusal.Reason
			}
			if got != c.refusal {
				t.Fatalf("refusal %q (%v), want %q (%s)", got, pv.Refusal, c.refusal, c.reason)
			}
			var repairs []string
			for _, r := range pv.Report.Repairs {
				repairs = append(repairs, r.Kind.String()+" "+r.Path)
			}
			if c.repairs != nil && !slices.Equal(repairs, c.repairs) {
				t.Errorf("repairs %v, want %v (%s)", repairs, c.repairs, c.reason)
			}
			if c.title != "" && pv.Normalized.GetFields()["title"].GetStringValue() != c.title {
				t.Errorf("normalized %v, want title %q", pv.Normalized, c.title)
			}
			if len(be.calls) != 0 {
				t.Errorf("the backend was called")
			}
		})
	}
}
