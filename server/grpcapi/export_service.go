package grpcapi

import (
	"context"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/export"
)

// ExportTools renders the tools the caller may invoke (the visibility rule
// ListTools follows) in a model API's tool-definition format
// (registry/export): the whole live snapshot in name order, one document.
// Descriptions and schemas only: never a backend target.
func (s *registryService) ExportTools(ctx context.Context, req *gatewayv1.ExportToolsRequest) (*gatewayv1.ExportToolsResponse, error) {
	f, ok := export.ParseFormat(req.GetFormat())
	if !ok {
		reason := "must be one of " + export.FormatNames()
		if req.GetFormat() != "" {
			reason += ", got an unknown format"
		}
		return nil, statusError(&requestFieldError{field: "format", reason: reason})
	}
	var tools []registry.Tool
	for _, e := range s.reg.Snapshot().List() {
		if s.shows(ctx, e.Tool.Name) {
			tools = append(tools, e.Tool)
		}
	}
	res, err := export.Export(f, tools)
	if err != nil {
		return nil, statusError(err)
	}
	resp := &gatewayv1.ExportToolsResponse{ToolsJson: string(res.Document)}
	for _, l := range res.LeftOut {
		resp.LeftOut = append(resp.LeftOut, &gatewayv1.LeftOutTool{Name: l.Name, Findings: lintFindingsProto(l.Findings)})
	}
	return resp, nil
}
