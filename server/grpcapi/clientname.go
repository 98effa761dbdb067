package grpcapi

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"
)

// userAgentProduct is the calling program's name as this face learns it,
// for repair analytics (pipeline.Call.SetClientSource): the first product
// of the user-agent header without its version ("grpc-go" of
// "grpc-go/1.79.0", "flowdropctl" of "flowdropctl/dev grpc-go/1.79.0").
// Read only when asked: the metadata read allocates.
func userAgentProduct(ctx context.Context) string {
	v := metadata.ValueFromIncomingContext(ctx, "user-agent")
	if len(v) == 0 {
		return ""
	}
	ua := strings.TrimSpace(v[0])
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		return ua[:i]
	}
	return ua
}
