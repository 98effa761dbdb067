package pipeline_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/server/pipeline"
)

// forwardBackend reports what a backend kind sees of a call: whether the
// received bytes are still what it must send, and the arguments.
type forwardBackend struct {
	forwardable bool
	args        *structpb.Struct
	// message is the forwarded request head decoded, when forwardable.
	message *gatewayv1.InvokeRequest
}

func (b *forwardBackend) Invoke(_ context.Context, c *pipeline.Call) (pipeline.Result, error) {
	var rcv pipeline.Received
	rcv, b.forwardable = c.Forwardable()
	if b.forwardable {
		b.args = new(structpb.Struct)
		if err := proto.Unmarshal(rcv.Args, b.args); err != nil {
			return pipeline.Result{}, err
		}
		b.message = new(gatewayv1.InvokeRequest)
		if err := proto.Unmarshal(rcv.Message, b.message); err != nil {
			return pipeline.Result{}, err
		}
	} else {
		args, err := c.Args()
		if err != nil {
			return pipeline.Result{}, err
		}
		b.args = args
	}
	return pipeline.Result{}, nil
}

// TestReceivedArgumentsFastAndGeneralPathsAgree: a call holding received
// bytes is decoded only when a stage needs it, forwarded as received when
// nothing changed — and with the fast paths off, always decoded and
// re-encoded, with the same verdicts and the same arguments reaching the
// backend.
func TestReceivedArgumentsFastAndGeneralPathsAgree(t *testing.T) {
	t.Parallel()
	reg := demoRegistry(t)
	cases := []struct {
		name, reason string
		args         map[string]any
		// fast path: forwarded as received, and no decode at all
		wantForwarded, wantDecoded bool
		wantInvalid                bool
		wantArgs                   map[string]any // what the backend gets when not forwarded
	}{
		{name: "clean", reason: "nothing to repair and valid: the bytes go as received, never decoded",
			args: map[string]any{"title": "Ember & Oak", "tags": []any{"a"}}, wantForwarded: true},
		{name: "repair", reason: "a repair is made on the wire: the backend gets the repaired bytes, nothing decoded whole",
			args:          map[string]any{"title": "Ember &amp; Oak", "tags": `["a"]`},
			wantForwarded: true, wantArgs: map[string]any{"title": "Ember & Oak", "tags": []any{"a"}}},
		{name: "invalid", reason: "invalid arguments are decoded for the violations and refused",
			args: map[string]any{"tags": []any{"a"}}, wantDecoded: true, wantInvalid: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wire, err := proto.Marshal(args(t, tc.args))
			if err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				invalid bool
				args    *structpb.Struct
			}
			run := func(off bool) (outcome, *forwardBackend, pipeline.Stats) {
				be := &forwardBackend{}
				p := pipeline.New(pipeline.Config{Registry: reg, Backend: be, DisableFastPaths: off})
				c := pipeline.NewCall("create_note", "call_1", nil)
				msg, err := proto.Marshal(&gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: args(t, tc.args), CallId: "call_1"})
				if err != nil {
					t.Fatal(err)
				}
				c.Receive(pipeline.Received{Args: wire, Message: msg})
				_, perr := p.Invoke(context.Background(), c)
				o := outcome{invalid: perr != nil && perr.Kind == pipeline.KindValidation}
				if perr != nil && !o.invalid {
					t.Fatalf("fast paths off=%v: %v", off, perr)
				}
				o.args = be.args
				if be.forwardable {
					if m := be.message; m.GetTool() != "create_note" || m.GetCallId() != "call_1" || !proto.Equal(m.GetArguments(), be.args) {
						t.Errorf("forwarded request head %v: want tool, call_id and the forwarded arguments (%s)", m, tc.reason)
					}
				}
				return o, be, p.Stats()
			}
			fast, fastBE, fastStats := run(false)
			general, generalBE, generalStats := run(true)

			if fast.invalid != tc.wantInvalid || general.invalid != tc.wantInvalid {
				t.Fatalf("invalid: fast %v, general %v, want %v (%s)", fast.invalid, general.invalid, tc.wantInvalid, tc.reason)
			}
			if !proto.Equal(fast.args, general.args) {
				t.Errorf("backend arguments differ: fast %v, general %v (%s)", fast.args, general.args, tc.reason)
			}
			if tc.wantArgs != nil && !proto.Equal(fast.args, args(t, tc.wantArgs)) {
				t.Errorf("backend got %v, want %v (%s)", fast.args, tc.wantArgs, tc.reason)
			}
			if !tc.wantInvalid && fastBE.forwardable != tc.wantForwarded {
				t.Errorf("fast path forwardable = %v, want %v (%s)", fastBE.forwardable, tc.wantForwarded, tc.reason)
			}
			if generalBE.forwardable {
				t.Errorf("fast paths off, yet the received bytes were forwarded (%s)", tc.reason)
			}
			if got := fastStats.Decoded > 0; got != tc.wantDecoded {
				t.Errorf("fast path decoded %d times, want decoded=%v (%s)", fastStats.Decoded, tc.wantDecoded, tc.reason)
			}
			if fastStats.Decoded > 1 || generalStats.Decoded != 1 {
				t.Errorf("decodes: fast %d, general %d; want at most one each, and one on the general path (%s)",
					fastStats.Decoded, generalStats.Decoded, tc.reason)
			}
		})
	}
}
