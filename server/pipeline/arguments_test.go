package pipeline

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
)

// argsView is what the stages and the backend learn by asking an
// Arguments, after a row's steps.
type argsView struct {
	Undecoded, WireChecked, Repaired, RepairedWire, Rescreen, ForBackend bool
	// BackendArgs: the arguments the backend gets (the forwarded bytes
	// decoded, or Struct); AuditSent/AuditRepaired: the audit line's.
	BackendArgs, AuditSent, AuditRepaired *structpb.Struct
	// Decodes counts the decodes of the whole test (it asks for the
	// decoded form at the end): at most one, none when the face decoded.
	Decodes int64
}

func structOf(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wireOf(t *testing.T, s *structpb.Struct) []byte {
	t.Helper()
	b, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decoded(t *testing.T, b []byte) *structpb.Struct {
	t.Helper()
	s := new(structpb.Struct)
	if err := proto.Unmarshal(b, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestArgumentsAnswers: each form the arguments can be given in, and each
// thing a stage can do to them, gives the answers the stages and the
// backend rely on — bytes forwarded exactly when they are still what the
// backend must get, limits checked again exactly when the arguments may
// differ from what screen checked, the audit line's two forms, and at most
// one decode.
func TestArgumentsAnswers(t *testing.T) {
	t.Parallel()
	sent := map[string]any{"title": "Ember &amp; Oak"}
	fixed := map[string]any{"title": "Ember & Oak"}
	cases := []struct {
		name, reason string
		steps        func(t *testing.T, a *Arguments)
		general      bool // the pipeline's fast paths off
		want         argsView
	}{
		{name: "received", reason: "bytes nobody asked to decode go to the backend as received",
			steps: func(t *testing.T, a *Arguments) { a.receive(Received{Args: wireOf(t, structOf(t, sent))}) },
			want: argsView{Undecoded: true, WireChecked: true, ForBackend: true, BackendArgs: structOf(t, sent),
				AuditSent: structOf(t, sent), Decodes: 1}},
		{name: "received-decoded-unchanged", reason: "decoded and normalized to itself: still forwarded as received, decoded once",
			steps: func(t *testing.T, a *Arguments) {
				a.receive(Received{Args: wireOf(t, structOf(t, sent))})
				s, _ := a.Struct("t", nil)
				a.normalized(s)
			},
			want: argsView{ForBackend: true, BackendArgs: structOf(t, sent), AuditSent: structOf(t, sent), Decodes: 1}},
		{name: "received-changed", reason: "normalized on the decoded form: the bytes no longer go, limits are checked again",
			steps: func(t *testing.T, a *Arguments) {
				a.receive(Received{Args: wireOf(t, structOf(t, sent))})
				a.Struct("t", nil)
				a.normalized(structOf(t, fixed))
			},
			want: argsView{Rescreen: true, BackendArgs: structOf(t, fixed), AuditSent: structOf(t, sent), AuditRepaired: structOf(t, fixed), Decodes: 1}},
		{name: "received-not-canonical", reason: "bytes holding more than their decoded form are never forwarded",
			steps: func(t *testing.T, a *Arguments) {
				a.receive(Received{Args: wireOf(t, structOf(t, sent))})
				a.reencoded()
				a.Struct("t", nil)
			},
			want: argsView{Rescreen: true, BackendArgs: structOf(t, sent), AuditSent: structOf(t, sent), Decodes: 1}},
		{name: "repaired-on-wire", reason: "a wire repair: the repaired bytes (and request) go, undecoded; the audit line has both forms",
			steps: func(t *testing.T, a *Arguments) {
				a.receive(Received{Args: wireOf(t, structOf(t, sent))})
				head := invokewire.BeginRequest("t", 0, "c")
				a.repairedOnWire(append(head, wireOf(t, structOf(t, fixed))...), len(head), "c")
			},
			want: argsView{Undecoded: true, WireChecked: true, Repaired: true, RepairedWire: true, Rescreen: true, ForBackend: true,
				BackendArgs: structOf(t, fixed), AuditSent: structOf(t, sent), AuditRepaired: structOf(t, fixed), Decodes: 1}},
		{name: "repaired-then-nulls-dropped", reason: "a change after a wire repair: the repaired bytes no longer go either",
			steps: func(t *testing.T, a *Arguments) {
				a.receive(Received{Args: wireOf(t, structOf(t, sent))})
				head := invokewire.BeginRequest("t", 0, "c")
				a.repairedOnWire(append(head, wireOf(t, structOf(t, fixed))...), len(head), "c")
				a.Struct("t", nil)
				a.replaced(structOf(t, map[string]any{}))
			},
			want: argsView{Repaired: true, Rescreen: true, BackendArgs: structOf(t, map[string]any{}),
				AuditSent: structOf(t, sent), AuditRepaired: structOf(t, map[string]any{}), Decodes: 1}},
		{name: "face-decoded", reason: "decoded by the face: nothing to forward as bytes, limits checked on the decoded form",
			steps: func(t *testing.T, a *Arguments) { a.setStruct(structOf(t, sent)) },
			want:  argsView{Rescreen: true, BackendArgs: structOf(t, sent), AuditSent: structOf(t, sent)}},
		{name: "json", reason: "JSON text is parsed once, when first asked",
			steps: func(t *testing.T, a *Arguments) {
				a.receiveJSON(ArgumentsJSONField, `{"title":"Ember &amp; Oak"}`, false)
			},
			want: argsView{Rescreen: true, BackendArgs: structOf(t, sent), AuditSent: structOf(t, sent), Decodes: 1}},
		{name: "general", reason: "fast paths off: no wire checks and nothing forwarded as bytes, though the bytes are undecoded",
			general: true,
			steps:   func(t *testing.T, a *Arguments) { a.receive(Received{Args: wireOf(t, structOf(t, sent))}) },
			want:    argsView{Undecoded: true, Rescreen: true, BackendArgs: structOf(t, sent), AuditSent: structOf(t, sent), Decodes: 1}},
		{name: "detached", reason: "a run past the call keeps the decoded form only: the face's bytes are not its to keep",
			steps: func(t *testing.T, a *Arguments) {
				a.receive(Received{Args: wireOf(t, structOf(t, sent))})
				a.Struct("t", nil)
				*a = a.detached()
			},
			want: argsView{Rescreen: true, BackendArgs: structOf(t, sent), AuditSent: structOf(t, sent), Decodes: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var decodes atomic.Int64
			a := &Arguments{general: tc.general, decodes: &decodes}
			tc.steps(t, a)
			var got argsView
			_, got.Undecoded = a.Undecoded()
			_, got.WireChecked = a.WireChecked()
			got.Repaired = a.Repaired()
			_, got.RepairedWire = a.RepairedWire()
			got.Rescreen = a.Rescreen()
			var rcv Received
			rcv, got.ForBackend = a.WireForBackend()
			// The audit line: from the bytes while undecoded, else decoded.
			if s, r, ok := a.forAuditWire(); ok {
				got.AuditSent = decoded(t, s)
				if r != nil {
					got.AuditRepaired = decoded(t, r)
				}
			}
			if got.ForBackend {
				got.BackendArgs = decoded(t, rcv.Args)
				if rcv.Message != nil {
					// The request built around repaired bytes carries them.
					m := new(gatewayv1.InvokeRequest)
					if err := proto.Unmarshal(rcv.Message, m); err != nil || !proto.Equal(m.GetArguments(), got.BackendArgs) {
						t.Errorf("request %v (%v): want the forwarded arguments in it (%s)", m, err, tc.reason)
					}
				}
			} else {
				s, err := a.Struct("t", nil)
				if err != nil {
					t.Fatal(err)
				}
				got.BackendArgs = s
			}
			if got.AuditSent == nil {
				got.AuditSent, got.AuditRepaired = a.forAudit("t", nil)
			}
			// Asking again decodes nothing more.
			a.Struct("t", nil)
			a.Sent("t", nil)
			got.Decodes = decodes.Load()
			if d := cmp.Diff(tc.want, got, protocmp.Transform()); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, d)
			}
		})
	}
}

// TestArgumentsRefusalsAreKept: a decode or parse refusal is the
// InvalidArgument the reason names, made once and answered to every later
// ask (a stage never decodes the same bad bytes twice).
func TestArgumentsRefusalsAreKept(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		give         func(a *Arguments)
		want         Reason
	}{
		{"bytes", "bytes that are not a Struct", func(a *Arguments) { a.receive(Received{Args: []byte{0x0a, 0x05}}) }, ReasonArgumentsUndecodable},
		{"both", "a Struct and JSON text in one request", func(a *Arguments) { a.receiveJSON(ArgumentsJSONField, `{}`, true) }, ReasonArgumentsUndecodable},
		{"json", "text that is not an object", func(a *Arguments) { a.receiveJSON(ArgumentsJSONField, `[1]`, false) }, ReasonArgumentsInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var decodes atomic.Int64
			a := &Arguments{decodes: &decodes}
			tc.give(a)
			_, err1 := a.Struct("t", nil)
			_, err2 := a.Struct("t", nil)
			var e *Error
			if !errors.As(err1, &e) || e.Code != InvalidArgument || e.Reason != tc.want || e.Tool != "t" {
				t.Fatalf("%s: %v; want InvalidArgument %s", tc.reason, err1, tc.want)
			}
			if err1 != err2 || decodes.Load() != 0 {
				t.Errorf("%s: the second ask gave %v (first %v), %d decodes counted; want the same refusal, none", tc.reason, err2, err1, decodes.Load())
			}
		})
	}
}
