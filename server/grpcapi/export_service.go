package grpcapi

import (
	"context"
	"fmt"
	"sort"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/export"
)

// ExportTools renders the tools the caller may invoke (the visibility rule
// ListTools follows) in a model API's tool-definition format
// (registry/export), in name order: the whole live snapshot in one
// document, or with page_size a page of it (a name cursor, as ListTools's:
// paging stays correct while tools come and go). Descriptions and schemas
// only: never a backend target.
func (s *registryService) ExportTools(ctx context.Context, req *gatewayv1.ExportToolsRequest) (*gatewayv1.ExportToolsResponse, error) {
	f, ok := export.ParseFormat(req.GetFormat())
	if !ok {
		reason := "must be one of " + export.FormatNames()
		if req.GetFormat() != "" {
			reason += ", got an unknown format"
		}
		return nil, statusError(&requestFieldError{field: "format", reason: reason})
	}
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, statusError(&requestFieldError{field: "page_size", reason: fmt.Sprintf("must not be negative, got %d", size)})
	case size > maxListPageSize:
		size = maxListPageSize
	}
	after, err := decodePageToken(req.GetPageToken())
	if err != nil {
		return nil, statusError(err)
	}
	snap := s.reg.Snapshot()
	inBundle, err := bundleFilter(snap, req.GetBundle())
	if err != nil {
		return nil, statusError(err)
	}
	entries := snap.List()
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Tool.Name > after })
	var tools []registry.Tool
	next := ""
	for ; i < len(entries); i++ {
		t := entries[i].Tool
		if !inBundle(&t) || !s.shows(ctx, t.Name) {
			continue
		}
		if size > 0 && len(tools) == size {
			next = encodePageToken(tools[size-1].Name) // one more exists
			break
		}
		tools = append(tools, t)
	}
	res, err := export.Export(f, tools, snap)
	if err != nil {
		return nil, statusError(err)
	}
	resp := &gatewayv1.ExportToolsResponse{ToolsJson: string(res.Document), NextPageToken: next}
	for _, l := range res.LeftOut {
		resp.LeftOut = append(resp.LeftOut, &gatewayv1.LeftOutTool{Name: l.Name, Findings: lintFindingsProto(l.Findings)})
	}
	// The gateway knows both halves — what the strict rewrite made nullable
	// and its own policy for the tool — so it says which calls would fail,
	// rather than publishing its policy for the client to combine.
	for _, name := range res.NullableOptional {
		if !s.dropsOptionalNulls(ctx, name) {
			resp.OptionalNullsRefused = append(resp.OptionalNullsRefused, name)
		}
	}
	return resp, nil
}
