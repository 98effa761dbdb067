package pipeline_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

func optionalNulls(t testing.TB, cfg policy.OptionalNullsConfig) *policy.OptionalNulls {
	t.Helper()
	o, err := policy.NewOptionalNulls(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// receivedCall is a create_note call holding its arguments as received
// bytes, as the gRPC face builds it.
func receivedCall(t *testing.T, a map[string]any) *pipeline.Call {
	t.Helper()
	s := args(t, a)
	wire, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(&gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: s, CallId: "call_1"})
	if err != nil {
		t.Fatal(err)
	}
	c := pipeline.NewCall("create_note", "call_1", nil)
	c.Receive(pipeline.Received{Args: wire, Message: msg})
	return c
}

// TestOptionalNullsInTheNormalizeStage: with normalize.optional_nulls:
// drop for the tool, a null sent for an optional property is removed
// before validation and reported; the backend gets the arguments without
// it (never the received bytes that still hold it, also after a repair on
// the wire); arguments without a null stay bytes. Off (the default, or a
// per-tool keep), the null is left for validation, which refuses it. The
// fast and general paths agree.
func TestOptionalNullsInTheNormalizeStage(t *testing.T) {
	t.Parallel()
	reg := demoRegistry(t)
	drop := policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop}
	cases := []struct {
		name, reason string
		nulls        policy.OptionalNullsConfig
		args         map[string]any
		wantInvalid  bool
		wantArgs     map[string]any // what the backend gets
		wantRepairs  []string       // kind:path
		// fast path only: forwarded as received and never decoded
		wantAsReceived bool
	}{
		{name: "off", reason: "the default keeps RT-TOOL-8's behaviour: the null reaches validation, which refuses it",
			args: map[string]any{"title": "t", "tags": nil}, wantInvalid: true},
		{name: "kept-per-tool", reason: "a per-tool keep wins over the default drop (first matching glob)",
			nulls: policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop, Tools: []policy.ToolOptionalNulls{{Match: "create_*", Mode: policy.OptionalNullsKeep}}},
			args:  map[string]any{"title": "t", "tags": nil}, wantInvalid: true},
		{name: "dropped", reason: "on: the optional null is removed, reported, and the call passes",
			nulls: drop, args: map[string]any{"title": "t", "tags": nil, "body": nil},
			wantArgs: map[string]any{"title": "t"}, wantRepairs: []string{"null-dropped:/body", "null-dropped:/tags"}},
		{name: "dropped-per-tool", reason: "a per-tool drop under the default keep",
			nulls:    policy.OptionalNullsConfig{Tools: []policy.ToolOptionalNulls{{Match: "create_note", Mode: policy.OptionalNullsDrop}}},
			args:     map[string]any{"title": "t", "tags": nil},
			wantArgs: map[string]any{"title": "t"}, wantRepairs: []string{"null-dropped:/tags"}},
		{name: "after-a-wire-repair", reason: "after RT-TOOL-8 repaired the bytes, the backend must get the decoded arguments without the null, not the repaired bytes",
			nulls: drop, args: map[string]any{"title": "Ember &amp; Oak", "tags": nil},
			wantArgs: map[string]any{"title": "Ember & Oak"}, wantRepairs: []string{"entities-decoded:/title", "null-dropped:/tags"}},
		{name: "required-null", reason: "a required property's null is never removed: still refused",
			nulls: drop, args: map[string]any{"title": nil, "tags": nil}, wantInvalid: true},
		{name: "no-null", reason: "on, but nothing to drop: the bytes go as received, never decoded",
			nulls: drop, args: map[string]any{"title": "t", "tags": []any{"a"}},
			wantArgs: map[string]any{"title": "t", "tags": []any{"a"}}, wantAsReceived: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, off := range []bool{false, true} {
				be := &forwardBackend{}
				p := pipeline.New(pipeline.Config{Registry: reg, Backend: be, DisableFastPaths: off,
					OptionalNulls: optionalNulls(t, tc.nulls)})
				c := receivedCall(t, tc.args)
				_, err := p.Invoke(context.Background(), c)
				if tc.wantInvalid {
					if err == nil || err.Kind != pipeline.KindValidation {
						t.Fatalf("fast paths off=%v: err %v, want a validation refusal (%s)", off, err, tc.reason)
					}
					continue
				}
				if err != nil {
					t.Fatalf("fast paths off=%v: %v (%s)", off, err, tc.reason)
				}
				if !proto.Equal(be.args, args(t, tc.wantArgs)) {
					t.Errorf("fast paths off=%v: backend got %v, want %v (%s)", off, be.args, tc.wantArgs, tc.reason)
				}
				var repairs []string
				for _, r := range c.Report.Repairs {
					repairs = append(repairs, r.Kind.String()+":"+r.Path)
				}
				if !slices.Equal(repairs, tc.wantRepairs) {
					t.Errorf("fast paths off=%v: repairs %v, want %v (%s)", off, repairs, tc.wantRepairs, tc.reason)
				}
				if !off {
					if asReceived := be.forwardable && p.Stats().Decoded == 0; asReceived != tc.wantAsReceived {
						t.Errorf("forwarded as received without a decode: %v, want %v (%s)", asReceived, tc.wantAsReceived, tc.reason)
					}
				}
			}
		})
	}
}

type nopBackend struct{}

func (nopBackend) Invoke(context.Context, *pipeline.Call) (pipeline.Result, error) {
	return pipeline.Result{}, nil
}

// TestOptionalNullsCostNothingWhenOffOrWithoutNull: the option off (no
// policy, or one dropping only other tools' nulls) and the option on for
// arguments holding no null add no allocation to a call on the fast path.
func TestOptionalNullsCostNothingWhenOffOrWithoutNull(t *testing.T) {
	reg := demoRegistry(t)
	a := map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}}
	allocs := func(nulls *policy.OptionalNulls) float64 {
		p := pipeline.New(pipeline.Config{Registry: reg, Backend: nopBackend{}, OptionalNulls: nulls})
		calls := make([]*pipeline.Call, 0, 101)
		for range 101 {
			calls = append(calls, receivedCall(t, a))
		}
		i := 0
		return testing.AllocsPerRun(100, func() {
			if _, err := p.Invoke(context.Background(), calls[i]); err != nil {
				t.Fatal(err)
			}
			i++
		})
	}
	base := allocs(nil)
	for _, tc := range []struct {
		name, reason string
		cfg          policy.OptionalNullsConfig
	}{
		{name: "other-tools", reason: "a policy dropping other tools' nulls: one glob match per call, no allocation",
			cfg: policy.OptionalNullsConfig{Tools: []policy.ToolOptionalNulls{{Match: "legacy_*", Mode: policy.OptionalNullsDrop}}}},
		{name: "on-without-null", reason: "on for this tool, arguments without a null: a wire scan, no decode",
			cfg: policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop}},
	} {
		if got := allocs(optionalNulls(t, tc.cfg)); got != base {
			t.Errorf("%s: %v allocations per call, %v with the option off (%s)", tc.name, got, base, tc.reason)
		}
	}
}
