package grpcapi

import (
	"log/slog"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc/codes"
)

// TestAccessLevelsAreTheMiddlewares: the level rule both faces log by
// (observe.AccessLevel) is the logging middleware's server rule for every
// code but OK, which is the configured level.
func TestAccessLevelsAreTheMiddlewares(t *testing.T) {
	t.Parallel()
	for _, ok := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		levels := accessLevels(ok)
		for c := codes.OK; c <= codes.Unauthenticated; c++ {
			want := logging.DefaultServerCodeToLevel(c)
			if c == codes.OK {
				want = logging.Level(ok)
			}
			if got := levels(c); got != want {
				t.Errorf("OK at %v: %v logged at %v, want %v", ok, c, got, want)
			}
		}
	}
}
