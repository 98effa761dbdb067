package server

import (
	"testing"

	"google.golang.org/grpc/connectivity"
)

func TestBackendPool(t *testing.T) {
	cfg := DefaultConfig()
	p := newBackendPool(&cfg)
	defer p.close()

	a1, relA1, err := p.get("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	a2, relA2, _ := p.get("127.0.0.1:1")
	b, relB, _ := p.get("127.0.0.1:2")
	if a1 != a2 {
		t.Error("two calls to one target got different connections; want one pooled connection")
	}
	if a1 == b {
		t.Error("two targets share a connection")
	}
	relB()

	// Target 1 leaves the registry while two calls still use it: it must stay
	// open until the last of them finishes. Target 2 is idle: closed at once.
	p.retain(func(string) bool { return false })
	if b.GetState() != connectivity.Shutdown {
		t.Errorf("idle retired connection state = %v, want Shutdown", b.GetState())
	}
	relA1()
	if a1.GetState() == connectivity.Shutdown {
		t.Error("retired connection closed while a call still uses it")
	}
	relA2()
	if a1.GetState() != connectivity.Shutdown {
		t.Errorf("retired connection state after its last call = %v, want Shutdown", a1.GetState())
	}

	// A target used again after retirement gets a fresh connection.
	a3, relA3, _ := p.get("127.0.0.1:1")
	defer relA3()
	if a3 == a1 {
		t.Error("got the closed connection back")
	}

	if _, _, err := p.get("dns:///%zz"); err == nil {
		t.Error("a malformed target was accepted")
	}
	p.close()
	if _, _, err := p.get("127.0.0.1:1"); err != errPoolClosed {
		t.Errorf("get after close: %v, want errPoolClosed", err)
	}
}
