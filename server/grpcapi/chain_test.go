package grpcapi

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc"
)

// chainUnary must behave like grpc.ChainUnaryInterceptor: interceptors run
// outermost first, each sees what the previous one passed on, a refusal
// stops the chain, and an interceptor that calls its handler twice runs the
// rest of the chain twice.
func TestChainUnaryRunsLikeGRPCChaining(t *testing.T) {
	t.Parallel()
	type ctxKey struct{}
	rec := func(log *[]string, name string) grpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			*log = append(*log, name+":"+req.(string))
			return h(context.WithValue(ctx, ctxKey{}, name), req.(string)+name)
		}
	}
	twice := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if _, err := h(ctx, req); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
	refuse := func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		return nil, errors.New("refused")
	}
	tests := []struct {
		name    string
		reason  string
		build   func(log *[]string) []grpc.UnaryServerInterceptor
		wantLog []string
		wantErr bool
	}{
		{name: "order", reason: "first is outermost; each passes its request and context on",
			build: func(log *[]string) []grpc.UnaryServerInterceptor {
				return []grpc.UnaryServerInterceptor{rec(log, "a"), rec(log, "b"), rec(log, "c")}
			},
			wantLog: []string{"a:", "b:a", "c:ab", "handler:abc/c"}},
		{name: "empty", reason: "no interceptors: the handler alone",
			build:   func(*[]string) []grpc.UnaryServerInterceptor { return nil },
			wantLog: []string{"handler:/"}},
		{name: "refusal", reason: "an error stops the chain before the handler",
			build: func(log *[]string) []grpc.UnaryServerInterceptor {
				return []grpc.UnaryServerInterceptor{rec(log, "a"), refuse, rec(log, "c")}
			},
			wantLog: []string{"a:"}, wantErr: true},
		{name: "handler-twice", reason: "a second handler call re-runs the rest of the chain",
			build: func(log *[]string) []grpc.UnaryServerInterceptor {
				return []grpc.UnaryServerInterceptor{rec(log, "a"), twice, rec(log, "c")}
			},
			wantLog: []string{"a:", "c:a", "handler:ac/c", "c:a", "handler:ac/c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log []string
			handler := func(ctx context.Context, req any) (any, error) {
				from, _ := ctx.Value(ctxKey{}).(string)
				log = append(log, "handler:"+req.(string)+"/"+from)
				return "ok", nil
			}
			resp, err := chainUnary(tc.build(&log)...)(context.Background(), "", &grpc.UnaryServerInfo{FullMethod: "/x/Y"}, handler)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && resp != "ok" {
				t.Errorf("resp = %v, want ok", resp)
			}
			if !slices.Equal(log, tc.wantLog) {
				t.Errorf("calls = %q, want %q", log, tc.wantLog)
			}
		})
	}
}
