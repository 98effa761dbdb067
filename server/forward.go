package server

import (
	"context"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Metadata the gateway sets or passes on to backends.
const (
	MDCallID = "x-flowdrop-call-id"
	MDCaller = "x-flowdrop-caller"
)

// propagatedMD are incoming headers passed to the backend unchanged so a
// request id follows the call.
var propagatedMD = []string{"grpc-trace-bin", "x-request-id"}

// traceMD is the W3C trace context (and baggage), copied as well when
// tracing is off. With tracing on it is NOT copied: the otelgrpc handlers
// (tracing.go) extract the incoming context and inject the gateway's
// client span, so a stale copy must not compete with it.
var traceMD = []string{"traceparent", "tracestate", "baggage"}

// forward calls the tool's backend with the (normalized, validated)
// arguments. The raw path (rawpath.go) forwards the request bytes instead
// when normalization changes nothing; both go through callBackend.
func (p *pipeline) forward(ctx context.Context, c *call) (*gatewayv1.InvokeResponse, error) {
	req := &gatewayv1.InvokeRequest{Tool: c.tool, Arguments: c.args, CallId: c.callID, Caller: c.caller}
	resp := new(gatewayv1.InvokeResponse)
	if err := p.callBackend(ctx, c, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// callBackend is the one backend call, shared by forward and the raw path
// (rawpath.go, which passes undecoded messages; the pool's connections
// use rawCodec, which sends those as they are and every other message as proto):
// the deadline budget, the pooled connection, the outgoing metadata and
// the *backendError wrapping.
func (p *pipeline) callBackend(ctx context.Context, c *call, req, resp any) error {
	target := c.entry.Tool.Backend
	budget, source := p.budget(ctx, c)
	fail := func(err error) error {
		return &backendError{tool: c.tool, target: target, timeout: budget, source: source, err: err}
	}
	if source != deadlineCaller {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	conn, err := p.pool.get(target)
	if err != nil {
		return fail(status.Error(codes.Unavailable, err.Error()))
	}
	defer conn.release()

	ctx = metadata.NewOutgoingContext(ctx, p.outgoingMD(ctx, c))
	if err := conn.cc.Invoke(ctx, gatewayv1.ToolBackendService_Invoke_FullMethodName, req, resp); err != nil {
		return fail(err)
	}
	return nil
}

// budget picks the call's deadline: the caller's, else the tool's timeout,
// else the gateway default.
func (p *pipeline) budget(ctx context.Context, c *call) (time.Duration, deadlineSource) {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), 0), deadlineCaller
	}
	if t := c.entry.Tool.Timeout; t > 0 {
		return t, deadlineTool
	}
	return p.defaultTimeout, deadlineDefault
}

func (p *pipeline) outgoingMD(ctx context.Context, c *call) metadata.MD {
	md := metadata.MD{}
	if c.callID != "" {
		md[MDCallID] = []string{c.callID}
	}
	if c.caller != nil && c.caller.GetSubject() != "" {
		md[MDCaller] = []string{c.caller.GetSubject()}
	}
	// ValueFromIncomingContext copies only the wanted values, where
	// FromIncomingContext copies the whole incoming map on every call.
	copyMD(ctx, md, propagatedMD)
	if !p.otelPropagates {
		copyMD(ctx, md, traceMD)
	}
	return md
}

func copyMD(ctx context.Context, md metadata.MD, keys []string) {
	for _, k := range keys {
		if v := metadata.ValueFromIncomingContext(ctx, k); len(v) > 0 {
			md[k] = v
		}
	}
}
