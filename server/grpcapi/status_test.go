package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry/schema"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/pipeline"
)

// backendFailure is the error a ToolService call to tool "t" (backend
// 127.0.0.1:9, timeout 1.5s) ends with when the gRPC client returns
// clientErr: the *pipeline.Error the backend kind classifies it into. A
// client interceptor stands in for the transport, so nothing is dialled.
func backendFailure(t *testing.T, clientErr error) error {
	t.Helper()
	ts := backend.NewToolService(backend.ToolServiceConfig{DialOptions: []grpc.DialOption{
		grpc.WithUnaryInterceptor(func(context.Context, string, any, any, *grpc.ClientConn, grpc.UnaryInvoker, ...grpc.CallOption) error {
			return clientErr
		}),
	}})
	t.Cleanup(ts.Close)
	c := pipeline.NewCall("t", "", nil)
	c.Entry = &registry.Entry{Tool: registry.Tool{Name: "t", Backend: "127.0.0.1:9", Timeout: 1500 * time.Millisecond}}
	_, err := ts.Invoke(context.Background(), c)
	if err == nil {
		t.Fatal("backend call succeeded; want its failure")
	}
	if e, ok := err.(*pipeline.Error); !ok || !strings.HasPrefix(string(e.Reason), "backend-") || !errors.Is(err, clientErr) {
		t.Fatalf("backend failure = %#v; want a *pipeline.Error with a backend-* reason caused by the client's error", err)
	}
	return err
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	withInfo, _ := status.New(codes.Unavailable, "connection refused").WithDetails(&errdetails.RetryInfo{})
	backendOwn, _ := status.New(codes.PermissionDenied, "not your note").WithDetails(&errdetails.ErrorInfo{Reason: "OWNER"})
	be := func(err error) error { return backendFailure(t, err) }
	cases := []struct {
		name        string
		reason      string
		err         error
		code        codes.Code
		msg         string // exact when set
		msgContains []string
		details     int
	}{
		{name: "not-found", reason: "unknown tools are NotFound naming the tool, with an ErrorInfo like every other refusal", err: pipeline.ToolNotFound("x"), code: codes.NotFound, msg: `tool "x" is not registered`, details: 1},
		{
			name: "validation", reason: "validation failures are InvalidArgument with the model-readable message, BadRequest, ErrorInfo and one Repair detail per repair",
			err: &schema.ValidationError{Tool: "t", Violations: []schema.Violation{{Pointer: "/ops", Message: "`ops` must be an array"}},
				Repairs: []normalize.Repair{{Path: "/title", Kind: normalize.EntitiesDecoded, Passes: 2}}},
			code: codes.InvalidArgument, msg: "invalid arguments for tool \"t\": `ops` must be an array", details: 3,
		},
		{name: "unreachable", reason: "Unavailable names the tool, not the target nor the transport's words (which name it), and keeps the details", err: be(withInfo.Err()), code: codes.Unavailable,
			msg: `tool "t": backend unavailable; try again later`, details: 1},
		{name: "deadline", reason: "DeadlineExceeded names the tool, the budget and where it came from, not the target", err: be(status.Error(codes.DeadlineExceeded, "context deadline exceeded")),
			code: codes.DeadlineExceeded, msg: `tool "t": backend did not answer within 1.5s (the tool's timeout)`},
		{name: "canceled", reason: "a canceled call is Canceled, not Unknown", err: be(context.Canceled), code: codes.Canceled, msgContains: []string{`tool "t"`}},
		{name: "backend-status", reason: "the backend's own status passes through unchanged, details included", err: be(backendOwn.Err()), code: codes.PermissionDenied, msg: "not your note", details: 1},
		{name: "backend-plain-error", reason: "a non-status error from the client is Unknown, as gRPC reports it", err: be(errors.New("boom")), code: codes.Unknown, msg: "boom"},
		{name: "status", reason: "a status error from a stage passes through", err: status.Error(codes.ResourceExhausted, "slow down"), code: codes.ResourceExhausted, msg: "slow down"},
		{name: "wrapped-not-found", reason: "domain errors are found when wrapped", err: fmt.Errorf("stage: %w", pipeline.ToolNotFound("y")), code: codes.NotFound, msg: `tool "y" is not registered`, details: 1},
		{name: "internal", reason: "anything else is our bug: Internal", err: errors.New("nil map"), code: codes.Internal, msgContains: []string{"internal error"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := status.Convert(statusError(tc.err))
			if st.Code() != tc.code {
				t.Fatalf("code = %v, want %v (%s)", st.Code(), tc.code, tc.reason)
			}
			if tc.msg != "" && st.Message() != tc.msg {
				t.Errorf("message = %q, want %q (%s)", st.Message(), tc.msg, tc.reason)
			}
			for _, s := range tc.msgContains {
				if !strings.Contains(st.Message(), s) {
					t.Errorf("message %q lacks %q (%s)", st.Message(), s, tc.reason)
				}
			}
			if got := len(st.Details()); got != tc.details {
				t.Errorf("%d details, want %d: %v (%s)", got, tc.details, st.Details(), tc.reason)
			}
			for _, d := range st.Details() {
				if ei, ok := d.(*errdetails.ErrorInfo); ok && st.Code() == codes.NotFound && (ei.Reason != "TOOL_NOT_FOUND" || ei.Domain != ErrorDomain || ei.Metadata["tool"] == "") {
					t.Errorf("ErrorInfo %v, want TOOL_NOT_FOUND naming the tool (%s)", ei, tc.reason)
				}
			}
		})
	}
	if statusError(nil) != nil {
		t.Error("statusError(nil) != nil")
	}
}

func TestValidationDetails(t *testing.T) {
	t.Parallel()
	err := statusError(&schema.ValidationError{Tool: "t",
		Violations: []schema.Violation{{Pointer: "/ops", Message: "m1"}, {Pointer: "", Message: "m2"}},
		Repairs:    []normalize.Repair{{Path: "/a", Kind: normalize.JSONDecoded}, {Path: "/b/0", Kind: normalize.EntitiesDecoded, Passes: 3, BoundHit: true}},
	})
	d := status.Convert(err).Details()
	wantBR := &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: "/ops", Description: "m1"}, {Field: "", Description: "m2"},
	}}
	wantInfo := &errdetails.ErrorInfo{Reason: ReasonArgumentsInvalid, Domain: ErrorDomain, Metadata: map[string]string{
		"tool": "t", "repair_0": "json-decoded:/a", "repair_1": "entities-decoded:/b/0",
	}}
	if len(d) != 4 || !proto.Equal(d[0].(proto.Message), wantBR) || !proto.Equal(d[1].(proto.Message), wantInfo) {
		t.Fatalf("details = %v", d)
	}
	if !proto.Equal(d[3].(proto.Message), repairProto(normalize.Repair{Path: "/b/0", Kind: normalize.EntitiesDecoded, Passes: 3, BoundHit: true})) {
		t.Errorf("repair detail = %v", d[3])
	}
}

// TestStatusFollowsReasonTable: for every reason, the gRPC face answers its
// row's code (a backend's own code for backend-error) and passes a wait on
// (RetryInfo) only for a reason a later retry may help.
func TestStatusFollowsReasonTable(t *testing.T) {
	t.Parallel()
	for _, r := range pipeline.Reasons() {
		s, _ := pipeline.SpecOf(r)
		e := &pipeline.Error{Code: s.Code, Reason: r, Tool: "t", Message: "m", RetryAfter: time.Second}
		want := codes.Code(s.Code)
		if s.Code == pipeline.CodeOfError {
			e.Code, want = pipeline.PermissionDenied, codes.PermissionDenied
		}
		switch {
		case r == pipeline.ReasonArgumentsInvalid:
			e.Kind = pipeline.KindValidation
		case s.Decision == policy.DecisionDeny:
			e.Kind = pipeline.KindPolicy
		}
		st := Status(e)
		if st.Code() != want {
			t.Errorf("%s: code %v, row %v", r, st.Code(), want)
		}
		for _, d := range st.Details() {
			if _, ok := d.(*errdetails.RetryInfo); ok && s.Retry != pipeline.RetryLater {
				t.Errorf("%s: RetryInfo for a reason whose row says retrying later does not help", r)
			}
		}
	}
}
