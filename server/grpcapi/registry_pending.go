package grpcapi

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/mcppin"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// ListPendingChanges pages through the imported tools that have a pending
// upstream change, in name order, from the live snapshot (the change is
// stored with the tool, so every replica lists the same). The page token
// is the last name returned, as for ListTools.
func (s *registryService) ListPendingChanges(ctx context.Context, req *gatewayv1.ListPendingChangesRequest) (*gatewayv1.ListPendingChangesResponse, error) {
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, statusError(&requestFieldError{field: "page_size", reason: fmt.Sprintf("must not be negative, got %d", size)})
	case size == 0:
		size = defaultListPageSize
	case size > maxListPageSize:
		size = maxListPageSize
	}
	after, err := decodePageToken(req.GetPageToken())
	if err != nil {
		return nil, statusError(err)
	}
	prefix := req.GetNamePrefix()
	backends := s.showsBackend(ctx)
	resp := &gatewayv1.ListPendingChangesResponse{}
	for _, e := range s.reg.Snapshot().List() {
		t := e.Tool
		if t.Name <= after || !strings.HasPrefix(t.Name, prefix) || t.Pending == nil || !s.shows(ctx, t.Name) {
			continue
		}
		if len(resp.Changes) == size {
			resp.NextPageToken = encodePageToken(resp.Changes[size-1].GetTool().GetName())
			break
		}
		resp.Changes = append(resp.Changes, s.pendingProto(t, backends))
	}
	return resp, nil
}

// GetPendingChange answers one tool's pending change from the snapshot.
func (s *registryService) GetPendingChange(ctx context.Context, req *gatewayv1.GetPendingChangeRequest) (*gatewayv1.GetPendingChangeResponse, error) {
	name := req.GetName()
	if err := checkNameField(name); err != nil {
		return nil, statusError(err)
	}
	e, ok := s.reg.Lookup(name)
	if !ok || !s.shows(ctx, name) {
		return nil, statusError(pipeline.ToolNotFound(name))
	}
	if e.Tool.Pending == nil {
		return nil, statusError(&registry.NoPendingChangeError{Tool: name})
	}
	return &gatewayv1.GetPendingChangeResponse{Change: s.pendingProto(e.Tool, s.showsBackend(ctx))}, nil
}

// ApprovePendingChange serves a tool's pending change (registry.ApprovePending).
func (s *registryService) ApprovePendingChange(ctx context.Context, req *gatewayv1.ApprovePendingChangeRequest) (*gatewayv1.ApprovePendingChangeResponse, error) {
	name, expected, err := pendingTarget(req.GetName(), req.ExpectedRevision)
	if err != nil {
		return nil, statusError(err)
	}
	res, deleted, err := s.reg.ApprovePending(ctx, name, expected, registry.RegisterOptions{StrictLint: s.strictLint, LintProfiles: s.lintProfiles})
	if err != nil {
		return nil, failed(ctx, notFoundAsTool(name, err))
	}
	if deleted {
		return &gatewayv1.ApprovePendingChangeResponse{Deleted: true}, nil
	}
	return &gatewayv1.ApprovePendingChangeResponse{Tool: toolProto(res.Tool), CompatibilityNotes: compatNotesProto(res.Notes),
		LintFindings: lintFindingsProto(res.Findings)}, nil
}

// RejectPendingChange drops a tool's pending change (registry.RejectPending).
func (s *registryService) RejectPendingChange(ctx context.Context, req *gatewayv1.RejectPendingChangeRequest) (*gatewayv1.RejectPendingChangeResponse, error) {
	name, expected, err := pendingTarget(req.GetName(), req.ExpectedRevision)
	if err != nil {
		return nil, statusError(err)
	}
	t, err := s.reg.RejectPending(ctx, name, expected)
	if err != nil {
		return nil, failed(ctx, notFoundAsTool(name, err))
	}
	return &gatewayv1.RejectPendingChangeResponse{Tool: toolProto(t)}, nil
}

// pendingTarget checks an approval's or rejection's name and revision.
func pendingTarget(name string, expectedRevision *int64) (string, *int64, error) {
	if err := checkNameField(name); err != nil {
		return "", nil, err
	}
	if expectedRevision != nil && *expectedRevision < 0 {
		return "", nil, &requestFieldError{field: "expected_revision", reason: fmt.Sprintf("must not be negative, got %d", *expectedRevision)}
	}
	return name, expectedRevision, nil
}

// pendingProto is a tool's pending change: the tool as served, the tool
// as it would be served, what changes and why it is held.
func (s *registryService) pendingProto(t registry.Tool, backends bool) *gatewayv1.PendingChange {
	p := t.Pending
	kinds, notes := registry.ChangeKinds(t, *p)
	out := &gatewayv1.PendingChange{Tool: s.readProto(t, backends), Kinds: kinds, CompatibilityNotes: compatNotesProto(notes),
		DetectedAt: timestamppb.New(p.DetectedAt), HeldBecause: mcppin.HeldByPolicy}
	if t.Edited() {
		out.HeldBecause = mcppin.HeldEdited
	}
	if !p.Removed {
		proposed := t.WithDefinition(p.Definition)
		proposed.Pending = nil
		out.Proposed = s.readProto(proposed, backends)
	}
	return out
}
