package observe

import (
	"fmt"
	"log/slog"

	"github.com/flowdrop/gateway/server/pipeline"
)

// AccessLevel is THE level of an access-log line ("finished call") on both
// faces: a call that ended OK is logged at ok (OKCallsLevel), any other
// code as the gRPC logging middleware's server rule has it
// (logging.DefaultServerCodeToLevel; grpcapi's test holds the two equal):
// a caller's mistake at INFO, a refusal or an overload at WARN, our own
// fault at ERROR.
func AccessLevel(code pipeline.Code, ok slog.Level) slog.Level {
	switch code {
	case pipeline.OK:
		return ok
	case pipeline.NotFound, pipeline.Canceled, pipeline.AlreadyExists, pipeline.InvalidArgument, pipeline.Unauthenticated:
		return slog.LevelInfo
	case pipeline.DeadlineExceeded, pipeline.PermissionDenied, pipeline.ResourceExhausted, pipeline.FailedPrecondition,
		pipeline.Aborted, pipeline.OutOfRange, pipeline.Unavailable:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// CheckOKCallsLevel reports what is wrong with l as the level of successful
// calls' access-log lines: INFO (the default) or DEBUG (off the default
// log, for a gateway whose every call would otherwise be a line).
func CheckOKCallsLevel(l slog.Level) error {
	if l != slog.LevelInfo && l != slog.LevelDebug {
		return fmt.Errorf("the level of successful calls' access-log lines must be info or debug, got %v", l)
	}
	return nil
}
