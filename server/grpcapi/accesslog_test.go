package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
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

// TestSecondTextIsFormat: the shared text of a second is t.Format(RFC3339)
// for every time, whether the second, its location or both change from one
// call to the next, and repeats of one.
func TestSecondTextIsFormat(t *testing.T) {
	t.Parallel()
	var c secondText
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	base := time.Date(2026, 12, 5, 4, 59, 59, 900_000_000, time.UTC)
	for i, tm := range []time.Time{
		base, base, base.Add(50 * time.Millisecond), base.Add(100 * time.Millisecond), // the next second
		base.In(paris), base.In(time.Local), base.In(time.FixedZone("X", -7*3600)), base,
		base.Add(-time.Hour), base.Add(24 * time.Hour), time.Unix(0, 0), time.Unix(0, 0).In(paris),
	} {
		if got, want := c.format(tm), tm.Format(time.RFC3339); got != want {
			t.Errorf("#%d %v: %q, want %q", i, tm, got, want)
		}
	}
}

// TestPeerTextIsString: a peer's shared text is its String() for TCP
// peers (v4, v6 with a zone, the same address object again, another
// object of the same port, ports in one slot) and other kinds of address.
func TestPeerTextIsString(t *testing.T) {
	t.Parallel()
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	for i, addr := range []net.Addr{
		a, a, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 40000}, a,
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000 + len(peerTexts)},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 443, Zone: "eth0"},
		&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, &net.UDPAddr{IP: net.IPv4(1, 2, 3, 4), Port: 5},
	} {
		if got, want := peerText(addr), addr.String(); got != want {
			t.Errorf("#%d: %q, want %q", i, got, want)
		}
	}
}
