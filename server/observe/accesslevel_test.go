package observe

import (
	"log/slog"
	"testing"

	"github.com/flowdrop/gateway/server/pipeline"
)

// TestAccessLevel: an access line's level by code — ok's level for OK, a
// caller's mistake at INFO, a refusal or overload at WARN, our own fault
// (and any code not named) at ERROR.
func TestAccessLevel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		code   pipeline.Code
		ok     slog.Level
		want   slog.Level
	}{
		{reason: "OK takes the configured level (debug)", code: pipeline.OK, ok: slog.LevelDebug, want: slog.LevelDebug},
		{reason: "OK takes the configured level (info)", code: pipeline.OK, ok: slog.LevelInfo, want: slog.LevelInfo},
		{reason: "an unknown tool is the caller's mistake", code: pipeline.NotFound, ok: slog.LevelDebug, want: slog.LevelInfo},
		{reason: "bad arguments are the caller's mistake", code: pipeline.InvalidArgument, ok: slog.LevelDebug, want: slog.LevelInfo},
		{reason: "no credentials is the caller's mistake", code: pipeline.Unauthenticated, ok: slog.LevelDebug, want: slog.LevelInfo},
		{reason: "a cancel is the caller's", code: pipeline.Canceled, ok: slog.LevelDebug, want: slog.LevelInfo},
		{reason: "a refusal is a warning", code: pipeline.PermissionDenied, ok: slog.LevelDebug, want: slog.LevelWarn},
		{reason: "an overload is a warning", code: pipeline.ResourceExhausted, ok: slog.LevelDebug, want: slog.LevelWarn},
		{reason: "a backend down is a warning", code: pipeline.Unavailable, ok: slog.LevelDebug, want: slog.LevelWarn},
		{reason: "a deadline is a warning", code: pipeline.DeadlineExceeded, ok: slog.LevelDebug, want: slog.LevelWarn},
		{reason: "our own fault is an error", code: pipeline.Internal, ok: slog.LevelDebug, want: slog.LevelError},
		{reason: "an unnamed code is an error", code: pipeline.Unknown, ok: slog.LevelDebug, want: slog.LevelError},
	}
	for _, tc := range cases {
		if got := AccessLevel(tc.code, tc.ok); got != tc.want {
			t.Errorf("AccessLevel(%v) = %v, want %v (%s)", tc.code, got, tc.want, tc.reason)
		}
	}
}

// TestCheckOKCallsLevel: successful calls are logged at INFO or DEBUG,
// never louder (or quieter than the default log can show by choice).
func TestCheckOKCallsLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		level  slog.Level
		ok     bool
	}{
		{reason: "the default", level: slog.LevelInfo, ok: true},
		{reason: "off the default log", level: slog.LevelDebug, ok: true},
		{reason: "a success is no warning", level: slog.LevelWarn},
		{reason: "a success is no error", level: slog.LevelError},
	} {
		if err := CheckOKCallsLevel(tc.level); (err == nil) != tc.ok {
			t.Errorf("CheckOKCallsLevel(%v) = %v, want ok %v (%s)", tc.level, err, tc.ok, tc.reason)
		}
	}
}
