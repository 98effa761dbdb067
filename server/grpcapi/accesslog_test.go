package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
)

// TestDurationMillisIsTheMiddlewares: grpc.time_ms is, for every duration
// from nanoseconds to hours, the text logging.DefaultDurationToFields gave.
func TestDurationMillisIsTheMiddlewares(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{0, 1, 999, time.Microsecond, 1500 * time.Nanosecond, 123456 * time.Nanosecond,
		time.Millisecond, 9999999, time.Second, 1234567 * time.Microsecond, time.Hour, 17*time.Hour + 3*time.Microsecond}
	for d := time.Duration(1); d < 100*time.Hour; d = d*3 + 7 {
		ds = append(ds, d)
	}
	for _, d := range ds {
		want := logging.DefaultDurationToFields(d)[1]
		if got := durationMillis(d); got != want {
			t.Errorf("%v: grpc.time_ms %q, want the middleware's %q", d, got, want)
		}
	}
}

// TestAddLogFieldsIsTheMiddlewares: the fields a call's stages add reach
// its line in the order, and with the values, logging.AddFields kept them
// (newest group first, a key's newest value wins), for sequences like the
// stages' and with repeated keys.
func TestAddLogFieldsIsTheMiddlewares(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		groups [][]string // key, value, key, value…
	}{
		{"the stages of a failed backend call", [][]string{
			{"flowdrop.tool", "t", "flowdrop.call_id", "c"}, {"flowdrop.caller", "a", "flowdrop.caller_method", "api-key"},
			{"flowdrop.repairs", "1"}, {"flowdrop.reason", "backend-unavailable"}, {"flowdrop.backend", "b", "flowdrop.cause", "x"}}},
		{"a key added again moves to the front with its new value", [][]string{
			{"a", "1", "b", "2"}, {"c", "3"}, {"a", "4"}}},
		{"a group replacing every earlier key", [][]string{{"a", "1"}, {"b", "2"}, {"b", "3", "a", "4"}}},
		{"more fields than the inline room", [][]string{
			{"k1", "1", "k2", "2", "k3", "3"}, {"k4", "4", "k5", "5"}, {"k6", "6", "k7", "7", "k8", "8"}, {"k9", "9", "k2", "x"}, {"k10", "10"}}},
		{"nothing added", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mw := logging.InjectFields(context.Background(), logging.Fields{})
			a := &accessCall{Context: context.Background()}
			a.fields = a.inline[:0]
			for _, g := range tc.groups {
				var fs logging.Fields
				var as []slog.Attr
				for i := 0; i < len(g); i += 2 {
					fs = append(fs, g[i], g[i+1])
					as = append(as, slog.String(g[i], g[i+1]))
				}
				logging.AddFields(mw, fs)
				addLogFields(a, as...)
			}
			var want, got []string
			for i := logging.ExtractFields(mw).Iterator(); i.Next(); {
				k, v := i.At()
				want = append(want, fmt.Sprint(k, "=", v))
			}
			for _, f := range a.fields {
				got = append(got, fmt.Sprint(f.Key, "=", f.Value))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("fields %v, want the middleware's %v", got, want)
			}
		})
	}
}

// TestAddLogFieldsOutsideACall: a context that is not a logged call's
// (health, reflection, a stream) takes fields without effect.
func TestAddLogFieldsOutsideACall(t *testing.T) {
	t.Parallel()
	addLogFields(context.Background(), slog.String("a", "b")) // must not panic
}
