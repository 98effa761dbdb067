package grpcapi

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/rawcodec"
)

// InvokeToolStream is InvokeTool with the tool's progress. Its request is
// InvokeTool's, received undecoded the same way; it then runs InvokeTool's
// own unary chain — the access log and the tool chain (outcome and audit,
// authentication, the stream method's role, every pipeline stage) — around
// a handler that dispatches with a progress sink and answers with the
// result. The stream's own interceptors (recovery, metrics) wrap it all;
// the stream authentication and role interceptors pass it by, since the
// tool chain authenticates it with its audit line (streamPolicy).
//
// Progress goes out from one writer goroutine through a one-slot mailbox:
// a report replaces one not yet sent, so a slow reader costs one pending
// event and the one being sent, never a queue. The result is sent by the
// handler after the writer has stopped (gRPC allows one sender at a time),
// and after the outcome is recorded, so fail-closed audit can still
// withhold it.

// invokeToolStreamMethod is InvokeToolStream's full method name.
const invokeToolStreamMethod = gatewayv1.ToolGatewayService_InvokeToolStream_FullMethodName

// streamResponse is the last message of a call: the result, encoded.
type streamResponse = rawcodec.Response

func rawInvokeToolStreamHandler(srv any, stream grpc.ServerStream) error {
	g := srv.(*gatewayService)
	rc := new(rawCall)
	if err := stream.RecvMsg(&rc.raw); err != nil {
		return err
	}
	defer rc.raw.Release()
	ctx := stream.Context()
	req, err := g.request(ctx, rc)
	if err != nil {
		return err
	}
	ctx = pipeline.WithCall(ctx, &rc.call)
	handler := func(ctx context.Context, _ any) (any, error) { return g.dispatchStream(ctx, stream) }
	resp, err := g.streamChain(ctx, req, g.streamInfo, handler)
	if err != nil {
		return err
	}
	return stream.SendMsg(resp)
}

// dispatchStream dispatches the call in ctx with its progress going out on
// stream, and returns the final message (the result).
func (g *gatewayService) dispatchStream(ctx context.Context, stream grpc.ServerStream) (any, error) {
	c := pipeline.CallFrom(ctx)
	if c == nil {
		return nil, status.Error(codes.Internal, "gateway misconfigured: InvokeToolStream reached the handler without the pipeline")
	}
	out := newProgressOut(stream)
	sink := pipeline.NewProgressSink(out.offer)
	go out.run()
	res, perr := g.p.Dispatch(pipeline.WithProgress(ctx, sink), c)
	sink.Close()
	out.finish()
	if perr != nil {
		return nil, Status(perr).Err()
	}
	repairs := c.Report.Repairs
	if res.Encoded != nil {
		return &streamResponse{Buf: invokewire.StreamResult(invokewire.ToolResponse(res.Encoded, repairs, res.Replayed))}, nil
	}
	return &gatewayv1.InvokeToolStreamResponse{Event: &gatewayv1.InvokeToolStreamResponse_Result{Result: &gatewayv1.InvokeToolResponse{
		Result: res.Value, IsError: res.IsError, Repairs: repairsProto(repairs), Replayed: res.Replayed}}}, nil
}

// progressOut sends a call's progress on its stream from one goroutine
// (run), holding at most one report not yet sent.
type progressOut struct {
	stream grpc.ServerStream
	wake   chan struct{} // a report or the end is waiting (one slot)
	done   chan struct{} // run has returned

	mu      sync.Mutex
	pending pipeline.Progress
	has     bool // pending is unsent
	ended   bool
}

func newProgressOut(stream grpc.ServerStream) *progressOut {
	return &progressOut{stream: stream, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// offer is the sink's emit: it never blocks (the sink calls it under its
// lock, from the backend's goroutine), replacing a report not yet sent.
func (o *progressOut) offer(p pipeline.Progress) {
	o.mu.Lock()
	o.pending, o.has = p, true
	o.mu.Unlock()
	o.signal()
}

func (o *progressOut) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run sends reports as they come until finish; a failed send (the caller
// is gone) ends it, and the call's context ends the call.
func (o *progressOut) run() {
	defer close(o.done)
	for range o.wake {
		o.mu.Lock()
		p, has, ended := o.pending, o.has, o.ended
		o.has = false
		o.mu.Unlock()
		if has {
			msg := &gatewayv1.InvokeToolStreamResponse{Event: &gatewayv1.InvokeToolStreamResponse_Progress{Progress: &gatewayv1.ToolProgress{
				Progress: p.Progress, Total: p.Total, Message: p.Message}}}
			if err := o.stream.SendMsg(msg); err != nil {
				return
			}
		}
		if ended {
			return
		}
	}
}

// finish sends the report still pending, if any, and waits for run to
// return: after it, the handler is the stream's only sender.
func (o *progressOut) finish() {
	o.mu.Lock()
	o.ended = true
	o.mu.Unlock()
	o.signal()
	<-o.done
}
