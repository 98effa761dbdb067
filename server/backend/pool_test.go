package backend

import (
	"testing"

	"google.golang.org/grpc/connectivity"
)

func TestBackendPool(t *testing.T) {
	t.Parallel()
	p := newBackendPool(nil, nil, EjectionConfig{}, nil)
	defer p.close()

	pa1, err := p.get("127.0.0.1:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	pa2, _ := p.get("127.0.0.1:1", nil)
	pb, _ := p.get("127.0.0.1:2", nil)
	a1, a2, b := pa1.cc, pa2.cc, pb.cc
	if a1 != a2 {
		t.Error("two calls to one target got different connections; want one pooled connection")
	}
	if a1 == b {
		t.Error("two targets share a connection")
	}
	pb.release()

	// Target 1 leaves the registry while two calls still use it: it must stay
	// open until the last of them finishes. Target 2 is idle: closed at once.
	p.retain(func(string) bool { return false })
	if b.GetState() != connectivity.Shutdown {
		t.Errorf("idle retired connection state = %v, want Shutdown", b.GetState())
	}
	pa1.release()
	if a1.GetState() == connectivity.Shutdown {
		t.Error("retired connection closed while a call still uses it")
	}
	pa2.release()
	if a1.GetState() != connectivity.Shutdown {
		t.Errorf("retired connection state after its last call = %v, want Shutdown", a1.GetState())
	}

	// A target used again after retirement gets a fresh connection.
	pa3, _ := p.get("127.0.0.1:1", nil)
	defer pa3.release()
	a3 := pa3.cc
	if a3 == a1 {
		t.Error("got the closed connection back")
	}

	if _, err := p.get("dns:///%zz", nil); err == nil {
		t.Error("a malformed target was accepted")
	}
	p.close()
	if _, err := p.get("127.0.0.1:1", nil); err != errPoolClosed {
		t.Errorf("get after close: %v, want errPoolClosed", err)
	}
}
