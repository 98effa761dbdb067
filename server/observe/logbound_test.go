package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

type stringer string

func (s stringer) String() string { return string(s) }

// TestBoundedLogger: whatever a caller's input puts in a record — its
// message, a string, error, Stringer or []byte value, inside a group or
// added with With — no value of the written line is over
// MaxLoggedValueBytes; a "stack" value is kept whole, and short values
// are unchanged.
func TestBoundedLogger(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10*MaxLoggedValueBytes)
	cut := policy.BoundTo(long, MaxLoggedValueBytes) // its first MaxLoggedValueBytes and how long it was
	cases := []struct {
		name, reason string
		log          func(l *slog.Logger)
		key          string // the JSON key to check ("msg" for the message; "g.k" inside group g)
		want         string // the value written
	}{
		{name: "message", reason: "the message is cut", log: func(l *slog.Logger) { l.Info(long) }, key: "msg", want: cut},
		{name: "string", reason: "a string value is cut", log: func(l *slog.Logger) { l.Info("m", "k", long) }, key: "k", want: cut},
		{name: "error", reason: "an error is formatted, then cut", log: func(l *slog.Logger) { l.Info("m", "k", errors.New(long)) }, key: "k", want: cut},
		{name: "stringer", reason: "a Stringer is formatted, then cut", log: func(l *slog.Logger) { l.Info("m", "k", stringer(long)) }, key: "k", want: cut},
		{name: "bytes", reason: "a []byte value is cut", log: func(l *slog.Logger) { l.Info("m", "k", []byte(long)) }, key: "k", want: cut},
		{name: "group", reason: "a value inside a group is cut", log: func(l *slog.Logger) { l.Info("m", slog.Group("g", "k", long)) }, key: "g.k", want: cut},
		{name: "with", reason: "a value added with With is cut", log: func(l *slog.Logger) { l.With("k", long).Info("m") }, key: "k", want: cut},
		{name: "stack", reason: "a stack is ours and useless cut: kept whole", log: func(l *slog.Logger) { l.Info("m", "stack", long) }, key: "stack", want: long},
		{name: "short", reason: "a short value is unchanged", log: func(l *slog.Logger) { l.Info("m", "k", "tool up.say_hello") }, key: "k", want: "tool up.say_hello"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tc.log(BoundedLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
			var rec map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatalf("%v: %s", err, buf.String())
			}
			var v any = rec
			for _, k := range strings.Split(tc.key, ".") {
				m, ok := v.(map[string]any)
				if !ok {
					t.Fatalf("no %s in %s", tc.key, buf.String())
				}
				v = m[k]
			}
			s, ok := v.(string)
			if !ok {
				t.Fatalf("%s is %T, want a string (%s)", tc.key, v, tc.reason)
			}
			if s != tc.want {
				t.Errorf("%s: %d bytes ending %q, want %d ending %q (%s)", tc.key, len(s), s[max(0, len(s)-20):], len(tc.want), tc.want[max(0, len(tc.want)-20):], tc.reason)
			}
		})
	}
}

// TestBoundedLoggerWrapsOnce: bounding a bounded logger returns it as is
// (no handler chain growing with each wrap).
func TestBoundedLoggerWrapsOnce(t *testing.T) {
	t.Parallel()
	l := BoundedLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	if again := BoundedLogger(l); again != l {
		t.Error("BoundedLogger wrapped a bounded logger again")
	}
}

// plainAttrs are an access line's kind of record: short strings and
// numbers, more than a record holds inline.
var plainAttrs = []slog.Attr{
	slog.String("protocol", "grpc"), slog.String("grpc.service", "s"), slog.String("grpc.method", "m"),
	slog.Int("flowdrop.repairs", 2), slog.Uint64("u", 7), slog.Float64("f", 1.5), slog.Bool("b", true),
	slog.Duration("d", 3*time.Millisecond), slog.Time("t", time.Unix(1e9, 0).UTC()), slog.String("stack", strings.Repeat("s", 3*MaxLoggedValueBytes)),
	slog.String("grpc.code", "OK"), slog.String("grpc.time_ms", "0.25"),
}

// TestBoundedLoggerPlainRecords: a record with nothing to cut or format
// (only short strings and plain values; a stack of any length) is written
// exactly as the handler under it writes it, at no allocation of the
// bounding's own; a record with one long value still has it cut.
func TestBoundedLoggerPlainRecords(t *testing.T) { // not parallel: AllocsPerRun
	var bare, bounded bytes.Buffer
	noClock := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	slog.New(slog.NewJSONHandler(&bare, noClock)).LogAttrs(context.Background(), slog.LevelInfo, "finished call", plainAttrs...)
	BoundedLogger(slog.New(slog.NewJSONHandler(&bounded, noClock))).LogAttrs(context.Background(), slog.LevelInfo, "finished call", plainAttrs...)
	if bare.String() != bounded.String() {
		t.Errorf("plain record written as\n%s want, as the bare handler,\n%s", bounded.String(), bare.String())
	}
	discard := func(l *slog.Logger) float64 {
		return testing.AllocsPerRun(200, func() {
			l.LogAttrs(context.Background(), slog.LevelInfo, "finished call", plainAttrs...)
		})
	}
	bareAllocs := discard(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if got := discard(BoundedLogger(slog.New(slog.NewJSONHandler(io.Discard, nil)))); got > bareAllocs && !raceEnabled {
		t.Errorf("a plain record costs %v allocations bounded, %v bare: the bounding copied it", got, bareAllocs)
	}
	bounded.Reset()
	long := strings.Repeat("x", 2*MaxLoggedValueBytes)
	BoundedLogger(slog.New(slog.NewJSONHandler(&bounded, nil))).LogAttrs(context.Background(), slog.LevelInfo, "m",
		append(plainAttrs[:len(plainAttrs):len(plainAttrs)], slog.String("k", long))...)
	if strings.Contains(bounded.String(), long) || !strings.Contains(bounded.String(), policy.BoundTo(long, MaxLoggedValueBytes)) {
		t.Errorf("a long value among plain ones was not cut: %d bytes written", bounded.Len())
	}
}
