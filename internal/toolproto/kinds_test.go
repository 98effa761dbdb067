package toolproto

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

// TestEveryOneofMemberIsAKind: each member of the contract's BackendSpec
// kind oneof is the registry kind of the same name, and SpecFromProto
// reads it as that kind (a member added to the contract without a case
// here, or without a registry kind, fails); the registry's kinds and the
// members are as many. (registry's TestEveryKindRoundTrips holds the other
// direction: every registry kind through SpecProto and back.)
func TestEveryOneofMemberIsAKind(t *testing.T) {
	spec := (&gatewayv1.BackendSpec{}).ProtoReflect()
	oneof := spec.Descriptor().Oneofs().ByName("kind")
	if oneof == nil {
		t.Fatal("BackendSpec has no kind oneof")
	}
	specKinds := 0
	for _, k := range registry.Kinds() {
		if k != registry.KindToolBackendService {
			specKinds++
		}
	}
	if n := oneof.Fields().Len(); n != specKinds {
		t.Errorf("the oneof has %d members, the registry %d spec kinds", n, specKinds)
	}
	for i := range oneof.Fields().Len() {
		fd := oneof.Fields().Get(i)
		want, ok := registry.SpecKind(string(fd.Name()))
		if !ok {
			t.Errorf("oneof member %s is no registry kind", fd.Name())
			continue
		}
		m := (&gatewayv1.BackendSpec{}).ProtoReflect()
		m.Set(fd, protoreflect.ValueOfMessage(m.NewField(fd).Message()))
		got, err := registry.KindOf(&registry.Tool{Spec: SpecFromProto(m.Interface().(*gatewayv1.BackendSpec))})
		if err != nil || got != want {
			t.Errorf("member %s reads as %v, %v; want kind %s", fd.Name(), got, err, want)
		}
	}
}
