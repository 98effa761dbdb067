package grpcapi

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/server/pipeline"
)

// blockedStream is a stream whose first send waits until release is
// closed (a reader that does not read), recording what was sent.
type blockedStream struct {
	grpc.ServerStream
	entered chan struct{} // closed when the first send begins
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	sent    []float64
}

func (s *blockedStream) Context() context.Context { return context.Background() }

func (s *blockedStream) SendMsg(m any) error {
	s.once.Do(func() {
		close(s.entered)
		<-s.release
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m.(*gatewayv1.InvokeToolStreamResponse).GetProgress().GetProgress())
	return nil
}

// TestProgressOutHoldsOne: while the stream's one send is blocked (a
// reader that does not read), further reports replace one another in
// the one pending slot: after the send, only the newest goes out, and
// finish sends it before returning.
func TestProgressOutHoldsOne(t *testing.T) {
	t.Parallel()
	s := &blockedStream{entered: make(chan struct{}), release: make(chan struct{})}
	out := newProgressOut(s)
	go out.run()
	out.offer(pipeline.Progress{Progress: 1})
	<-s.entered // the writer is stuck sending 1
	for i := 2; i <= 1000; i++ {
		out.offer(pipeline.Progress{Progress: float64(i)}) // never blocks
	}
	close(s.release)
	out.finish()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) != 2 || s.sent[0] != 1 || s.sent[1] != 1000 {
		t.Errorf("sent %v, want [1 1000]: one in flight, the newest pending", s.sent)
	}
}
