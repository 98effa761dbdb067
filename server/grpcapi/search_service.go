package grpcapi

import (
	"context"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry/search"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WithSearch serves SearchTools from idx (nil: Unimplemented).
func WithSearch(idx *search.Index) registryServiceOption {
	return func(s *registryService) { s.search = idx }
}

// SearchTools ranks the tools the caller may invoke (the visibility rule
// ListTools follows) against the query: the same index and the same
// ranking as the MCP face's discovery search. Names and short
// descriptions only: GetTool has the rest.
func (s *registryService) SearchTools(ctx context.Context, req *gatewayv1.SearchToolsRequest) (*gatewayv1.SearchToolsResponse, error) {
	if s.search == nil {
		return nil, status.Error(codes.Unimplemented, "tool search is not served by this gateway")
	}
	hits, err := s.search.Search(req.GetQuery(), int(req.GetLimit()), func(name string) bool { return s.shows(ctx, name) })
	if qe, ok := err.(*search.QueryError); ok {
		return nil, statusError(&requestFieldError{field: qe.Field, reason: qe.Reason})
	}
	if err != nil {
		return nil, failed(ctx, err)
	}
	resp := &gatewayv1.SearchToolsResponse{Hits: make([]*gatewayv1.SearchToolsHit, 0, len(hits))}
	for _, h := range hits {
		resp.Hits = append(resp.Hits, &gatewayv1.SearchToolsHit{Name: h.Entry.Tool.Name, Description: search.Short(h.Entry.Tool.Description), Score: h.Score})
	}
	return resp, nil
}
