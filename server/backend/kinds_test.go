package backend

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestEveryKindHasAnAdapter: each kind the registry lists has an adapter
// (a new kind without one fails here), and a kind the gateway does not
// know fails closed with the registry's typed error.
func TestEveryKindHasAnAdapter(t *testing.T) {
	ts := NewToolService(ToolServiceConfig{DefaultTimeout: time.Second, MaxRecvMsgSize: 1 << 20})
	t.Cleanup(ts.Close)
	k := NewKinds(ts)
	t.Cleanup(k.Close)
	for _, kind := range registry.Kinds() {
		if a, err := k.adapter(kind); err != nil || a == nil {
			t.Errorf("kind %s: adapter %v, %v; want one (add it to newAdapter)", kind, a, err)
		}
	}
	for _, kind := range []registry.Kind{0, registry.Kind(len(registry.Kinds()) + 1), 255} {
		var uk *registry.UnknownKindError
		if a, err := k.adapter(kind); a != nil || !errors.As(err, &uk) {
			t.Errorf("unknown kind %d: adapter %v, %v; want none and an *UnknownKindError", kind, a, err)
		}
	}
}

// TestInvokeUnknownKindFailsClosed: a call whose tool names no known kind
// (a spec with no kind set: never admitted, so only a bug gets here) is
// refused with the registry's typed error (the pipeline answers Internal,
// the detail in the cause), not sent to a ToolBackendService by default
// as the if chain once did.
func TestInvokeUnknownKindFailsClosed(t *testing.T) {
	ts := NewToolService(ToolServiceConfig{DefaultTimeout: time.Second, MaxRecvMsgSize: 1 << 20})
	t.Cleanup(ts.Close)
	k := NewKinds(ts)
	t.Cleanup(k.Close)
	c := pipeline.NewCall("no.kind", "call-1", &structpb.Struct{})
	c.Entry = &registry.Entry{Tool: registry.Tool{Name: "no.kind", Backend: "127.0.0.1:1", Spec: &registry.BackendSpec{}}}
	_, err := k.Invoke(context.Background(), c)
	var uk *registry.UnknownKindError
	if !errors.As(err, &uk) || uk.Tool != "no.kind" {
		t.Fatalf("Invoke: %v, want an *UnknownKindError naming the tool", err)
	}
	var pe *pipeline.Error
	if pe = pipeline.Classify(err); pe.Code != pipeline.Internal || pe.Message != "internal error" {
		t.Errorf("the pipeline answers %v %q, want Internal \"internal error\" (the detail in the cause only)", pe.Code, pe.Message)
	}
}
