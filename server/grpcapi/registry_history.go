package grpcapi

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

// GetToolHistory answers the tool's kept definitions from the store (the
// source of truth, not the snapshot: the snapshot keeps only the current
// one), newest first. Registry reads hide targets as GetTool does.
func (s *registryService) GetToolHistory(ctx context.Context, req *gatewayv1.GetToolHistoryRequest) (*gatewayv1.GetToolHistoryResponse, error) {
	name := req.GetName()
	if err := checkNameField(name); err != nil {
		return nil, statusError(err)
	}
	limit := req.GetLimit()
	if limit < 0 {
		return nil, statusError(&requestFieldError{field: "limit", reason: fmt.Sprintf("must not be negative, got %d", limit)})
	}
	resp := &gatewayv1.GetToolHistoryResponse{}
	if !s.shows(ctx, name) {
		return resp, nil // as for a tool never written: nothing to tell
	}
	revs, err := s.reg.History(ctx, name, int(limit))
	if errors.Is(err, registry.ErrHistoryNotKept) {
		return nil, status.Error(codes.FailedPrecondition, "the registry's store keeps no revision history")
	}
	if err != nil {
		return nil, failed(ctx, err)
	}
	backends := s.showsBackend(ctx)
	for _, r := range revs {
		resp.Revisions = append(resp.Revisions, &gatewayv1.ToolRevision{
			Revision: r.Revision, Time: timestamppb.New(r.Time), Writer: r.Writer, Tool: s.readProto(r.Tool, backends),
		})
	}
	return resp, nil
}
