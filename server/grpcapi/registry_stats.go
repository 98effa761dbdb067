package grpcapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/repairstats"
)

// WithRepairStats serves GetRepairStats from stats (without it the method
// answers FailedPrecondition).
func WithRepairStats(stats *repairstats.Stats) registryServiceOption {
	return func(s *registryService) { s.stats = stats }
}

// GetRepairStats answers the repair analytics this replica kept: every
// tool's, or one registered tool's (NotFound for another name). Admin role
// (the registry's default), and not filtered by the tool lists: it is the
// operator's view of every tool.
func (s *registryService) GetRepairStats(_ context.Context, req *gatewayv1.GetRepairStatsRequest) (*gatewayv1.GetRepairStatsResponse, error) {
	if s.stats == nil {
		return nil, status.Error(codes.FailedPrecondition, "this server keeps no repair analytics")
	}
	tool := req.GetTool()
	if tool != "" {
		if registry.ValidateName(tool) != nil {
			return nil, statusError(&requestFieldError{field: "tool", reason: fmt.Sprintf("%q is not a tool name: must match %s", policy.Bound(tool), registry.NamePattern)})
		}
		if _, ok := s.reg.Lookup(tool); !ok {
			return nil, statusError(pipeline.ToolNotFound(tool))
		}
	}
	snap := s.stats.Snapshot(tool)
	if tool != "" && len(snap.Tools) == 0 {
		snap.Tools = []repairstats.Tool{{Name: tool}} // registered, not called yet
	}
	return repairStatsProto(snap), nil
}

func repairStatsProto(snap repairstats.Snapshot) *gatewayv1.GetRepairStatsResponse {
	l, th := snap.Limits, snap.Thresholds
	resp := &gatewayv1.GetRepairStatsResponse{
		Since:    timestamppb.New(snap.Since),
		Overflow: snap.Overflow,
		Limits: &gatewayv1.RepairStatsLimits{MaxTools: int32(l.MaxTools), MaxFieldsPerTool: int32(l.MaxFieldsPerTool),
			MaxCallers: int32(l.MaxCallers), MaxClients: int32(l.MaxClients), MaxRows: int32(l.MaxRows)},
		Thresholds: &gatewayv1.RepairStatsThresholds{MinCalls: th.MinCalls, RepairShare: th.RepairShare,
			MinFailures: th.MinFailures, KeywordShare: th.KeywordShare, ClientShare: th.ClientShare},
	}
	for _, t := range snap.Tools {
		pt := &gatewayv1.ToolRepairStats{Tool: t.Name, Calls: t.Calls, FailedCalls: t.FailedCalls}
		if !t.Since.IsZero() {
			pt.Since = timestamppb.New(t.Since)
		}
		for _, r := range t.Rows {
			pt.Rows = append(pt.Rows, &gatewayv1.RepairStatsRow{Field: r.Field, Caller: r.Caller, Client: r.Client,
				EventKind: r.Event.Kind.String(), Event: r.Event.Name, Calls: r.Calls})
		}
		for _, sg := range t.Suggestions {
			pt.Suggestions = append(pt.Suggestions, &gatewayv1.SchemaSuggestion{Change: sg.Change, Field: sg.Field,
				EventKind: sg.Event.Kind.String(), Event: sg.Event.Name, Calls: sg.Calls, OfCalls: sg.Of, Client: sg.Client, Text: sg.Text})
		}
		resp.Tools = append(resp.Tools, pt)
	}
	return resp
}
