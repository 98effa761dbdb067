package observe

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/flowdrop/gateway/internal/policy"
)

// MaxLoggedValueBytes bounds the message and each string value of one log
// record. Values built from caller input (an error message quoting a tool
// name, the SDK's "calling tools/call: …") are bounded where they are made
// (policy.Bound); this is the net under them, so no record can grow with
// what a caller sends.
const MaxLoggedValueBytes = 2048

// BoundedLogger returns l with every record's message and string values cut
// to MaxLoggedValueBytes (a "stack" value is kept whole: it is ours, and
// useless cut).
func BoundedLogger(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(boundedHandler); ok {
		return l
	}
	return slog.New(boundedHandler{l.Handler()})
}

type boundedHandler struct{ h slog.Handler }

func (b boundedHandler) Enabled(ctx context.Context, l slog.Level) bool { return b.h.Enabled(ctx, l) }

func (b boundedHandler) Handle(ctx context.Context, r slog.Record) error {
	if withinBounds(r) {
		return b.h.Handle(ctx, r) // most records: nothing to cut, no copy
	}
	out := slog.NewRecord(r.Time, r.Level, policy.BoundTo(r.Message, MaxLoggedValueBytes), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(boundAttr(a))
		return true
	})
	return b.h.Handle(ctx, out)
}

// withinBounds reports whether r is what boundAttr would make of it: its
// message and string values are short and it holds only plain values (no
// group, LogValuer or any-kind value, which boundAttr resolves or formats).
func withinBounds(r slog.Record) bool {
	if len(r.Message) > MaxLoggedValueBytes {
		return false
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString:
			ok = len(a.Value.String()) <= MaxLoggedValueBytes || a.Key == "stack"
		case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		default:
			ok = false
		}
		return ok
	})
	return ok
}

func (b boundedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	bounded := make([]slog.Attr, len(as))
	for i, a := range as {
		bounded[i] = boundAttr(a)
	}
	return boundedHandler{b.h.WithAttrs(bounded)}
}

func (b boundedHandler) WithGroup(name string) slog.Handler {
	return boundedHandler{b.h.WithGroup(name)}
}

func boundAttr(a slog.Attr) slog.Attr {
	if a.Key == "stack" {
		return a
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > MaxLoggedValueBytes {
			return slog.String(a.Key, policy.BoundTo(s, MaxLoggedValueBytes))
		}
	case slog.KindGroup:
		as := v.Group()
		bounded := make([]slog.Attr, len(as))
		for i, g := range as {
			bounded[i] = boundAttr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(bounded...)}
	case slog.KindAny:
		// Errors and Stringers are formatted by the handler: format them
		// here, bounded. Other values (numbers, durations) have a bounded
		// form anyway.
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, policy.BoundTo(x.Error(), MaxLoggedValueBytes))
		case fmt.Stringer:
			return slog.String(a.Key, policy.BoundTo(x.String(), MaxLoggedValueBytes))
		case []byte:
			return slog.String(a.Key, policy.BoundTo(string(x), MaxLoggedValueBytes))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
