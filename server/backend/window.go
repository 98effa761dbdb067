package backend

import "google.golang.org/grpc"

// Backend connections use static HTTP/2 flow-control windows. gRPC's
// default, a dynamic window, starts a bandwidth estimate (a PING, with a
// connection WINDOW_UPDATE) on every DATA frame received while none is
// under way, so at a modest call rate nearly every backend response cost
// the gateway a PING out and its ACK back, with a wake-up of the
// connection's writer for each (BENCHMARKS.md, "Backend connections:
// static flow-control windows"). Static windows send none.
//
// They are sized so that no answer the gateway accepts waits for a window
// update: a stream's window holds the largest response the gateway reads
// (the backend receive limit and gRPC's 5-byte message prefix), at least
// HTTP/2's 64 KiB and at most the 16 MiB a dynamic window may grow to; the
// connection's is that 16 MiB. So a backend can have no more unread bytes
// in flight to the gateway than the dynamic window let it at its largest.
const (
	minBackendWindow  = 64 << 10
	maxBackendWindow  = 16 << 20 // grpc-go's ceiling for a dynamic window (bdpLimit)
	grpcMessagePrefix = 5
)

// backendStreamWindow is a backend stream's window for a receive limit of
// maxRecv bytes (<= 0: no limit of the gateway's, the ceiling).
func backendStreamWindow(maxRecv int) int32 {
	if maxRecv <= 0 || maxRecv > maxBackendWindow-grpcMessagePrefix {
		return maxBackendWindow
	}
	return int32(max(maxRecv+grpcMessagePrefix, minBackendWindow))
}

// windowOptions are the dial options of the windows above.
func windowOptions(maxRecv int) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithStaticStreamWindowSize(backendStreamWindow(maxRecv)),
		grpc.WithStaticConnWindowSize(maxBackendWindow),
	}
}
