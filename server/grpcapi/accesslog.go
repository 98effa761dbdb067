package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// The gRPC face's access log: one "finished call" line per unary call
// (health and reflection excepted), at the call's level (accessLevels).
//
// The line is the one the go-grpc-middleware logging interceptor
// (WithLogOnEvents(FinishCall)) wrote, field for field and in its order
// (testdata/grpc_access_lines.golden in package server holds it), built
// here without the middleware's per-call field slices, maps and boxed
// values: the fields stages add are kept typed in the call's accessCall,
// and the line is assembled once, on a stack array, when it is written.

// accessCall is one call's context, carrying the fields the stages add to
// its access line (addLogFields). It is the context itself, so a call
// costs one allocation for both.
type accessCall struct {
	context.Context
	fields []slog.Attr // newest group first, one value per key
	inline [8]slog.Attr
}

// accessCallKey finds a call's accessCall in its context.
type accessCallKey struct{}

func (a *accessCall) Value(key any) any {
	if key == (accessCallKey{}) {
		return a
	}
	return a.Context.Value(key)
}

// addLogFields adds attrs to the access line of the call in ctx (nothing
// when there is none): as the middleware's logging.AddFields did, the
// newest group comes first and replaces an earlier value of the same key.
func addLogFields(ctx context.Context, attrs ...slog.Attr) {
	a, ok := ctx.Value(accessCallKey{}).(*accessCall)
	if !ok {
		return
	}
	kept := a.fields[:0]
	for _, f := range a.fields {
		if !hasKey(attrs, f.Key) {
			kept = append(kept, f)
		}
	}
	n := len(kept)
	kept = append(kept, attrs...) // room for attrs; then attrs move to the front
	copy(kept[len(attrs):], kept[:n])
	copy(kept, attrs)
	a.fields = kept
}

// hasKey reports whether attrs has an attribute named key.
func hasKey(attrs []slog.Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

// appendUnique appends a to attrs unless attrs has its key (the first
// occurrence wins, as in the middleware's field merge).
func appendUnique(attrs []slog.Attr, a slog.Attr) []slog.Attr {
	if hasKey(attrs, a.Key) {
		return attrs
	}
	return append(attrs, a)
}

// accessLog is the access-log interceptor. When a successful call's line
// (at okLevel: INFO by default, DEBUG with --log-ok-calls=debug) would be
// written, the line has the middleware's order for a logged call (peer and
// start time before the stages' fields, the duration last); when it would
// not, only a failure is written, in the order of the middleware's replay
// of the finished call that this interceptor did before (start time and
// duration first, peer after the stages' fields): the golden file holds
// both.
func accessLog(log *slog.Logger, okLevel slog.Level) grpc.UnaryServerInterceptor {
	levels := accessLevels(okLevel)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		service, method := splitMethod(info.FullMethod)
		if isInfraService(service) {
			return handler(ctx, req)
		}
		start := time.Now()
		a := &accessCall{Context: ctx}
		a.fields = a.inline[:0]
		resp, err := handler(a, req)
		d := time.Since(start)
		if errors.Is(err, io.EOF) {
			err = nil // as the middleware: EOF is the end of a stream, not a failure
		}
		code := status.Code(err)
		level := slog.Level(levels(code))
		if !log.Enabled(a, level) {
			return resp, err
		}
		var buf [24]slog.Attr
		line := append(buf[:0],
			slog.String("protocol", "grpc"),
			slog.String("grpc.component", "server"),
			slog.String("grpc.service", service),
			slog.String("grpc.method", method),
			slog.String("grpc.method_type", methodType(info.FullMethod)))
		peerAddr, hasPeer := peer.FromContext(ctx)
		if log.Enabled(a, okLevel) {
			if hasPeer {
				line = append(line, slog.String("peer.address", peerText(peerAddr.Addr)))
			}
			line = appendUnique(line, slog.String("grpc.start_time", startTimes.format(start)))
			if dl, ok := ctx.Deadline(); ok {
				line = appendUnique(line, slog.String("grpc.request.deadline", deadlines.format(dl)))
			}
			for _, f := range a.fields {
				line = appendUnique(line, f)
			}
			line = appendUnique(line, slog.String("grpc.code", code.String()))
			if err != nil {
				line = appendUnique(line, slog.String("grpc.error", fmt.Sprintf("%v", err)))
			}
			line = appendUnique(line, slog.String("grpc.time_ms", durationMillis(d)))
		} else {
			line = appendUnique(line, slog.String("grpc.start_time", startTimes.format(start)))
			line = appendUnique(line, slog.String("grpc.time_ms", durationMillis(d)))
			for _, f := range a.fields {
				line = appendUnique(line, f)
			}
			if hasPeer {
				line = append(line, slog.String("peer.address", peerText(peerAddr.Addr)))
			}
			if dl, ok := ctx.Deadline(); ok {
				line = appendUnique(line, slog.String("grpc.request.deadline", deadlines.format(dl)))
			}
			line = appendUnique(line, slog.String("grpc.code", code.String()))
			line = appendUnique(line, slog.String("grpc.error", fmt.Sprintf("%v", err)))
		}
		// The handler directly, not Logger.LogAttrs: the level is checked
		// above, and the line has no use for the caller's program counter
		// (the gateway's handlers do not add the source).
		r := slog.NewRecord(time.Now(), level, "finished call", 0)
		r.AddAttrs(line...)
		_ = log.Handler().Handle(a, r)
		return resp, err
	}
}

// durationMillis is a call's duration as the middleware's grpc.time_ms
// (logging.DefaultDurationToFields): fmt's %v of float32 milliseconds with
// microsecond resolution, which is strconv's shortest 'g' form.
func durationMillis(d time.Duration) string {
	return strconv.FormatFloat(float64(float32(d.Nanoseconds()/1000)/1000), 'g', -1, 32)
}

// splitMethod splits a full method name "/service/method" as the
// middleware does ("unknown" for both if it has no second slash).
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.IndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", "unknown"
}

// secondText is the RFC 3339 text of the last second a call's time fell
// in: the format's resolution is the second, so the calls of one second
// share one string instead of formatting their own.
type secondText struct {
	last atomic.Pointer[formattedSecond]
}

type formattedSecond struct {
	unix int64
	loc  *time.Location
	text string
}

func (c *secondText) format(t time.Time) string {
	if f := c.last.Load(); f != nil && f.unix == t.Unix() && f.loc == t.Location() {
		return f.text
	}
	text := t.Format(time.RFC3339)
	c.last.Store(&formattedSecond{unix: t.Unix(), loc: t.Location(), text: text})
	return text
}

// The start times and the deadlines of calls, each its own run of seconds.
var startTimes, deadlines secondText

// peerTexts are the texts of recent TCP peers, one slot per port modulo
// their number: a connection's calls share its address (gRPC gives each
// stream the connection's net.Addr), so they share its text.
var peerTexts [64]atomic.Pointer[cachedPeer]

type cachedPeer struct {
	addr *net.TCPAddr
	text string
}

// peerText is addr.String(), from peerTexts when addr is a recent TCP peer.
func peerText(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	slot := &peerTexts[uint(tcp.Port)%uint(len(peerTexts))]
	if p := slot.Load(); p != nil && p.addr == tcp {
		return p.text
	}
	text := tcp.String()
	slot.Store(&cachedPeer{addr: tcp, text: text})
	return text
}

// methodType is the access line's grpc.method_type: InvokeToolStream's
// line is written by this interceptor too (invokeStreamChain).
func methodType(fullMethod string) string {
	if fullMethod == invokeToolStreamMethod {
		return "server_stream"
	}
	return "unary"
}
