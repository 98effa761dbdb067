package grpcapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/registry/search"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/repairstats"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ListTools page sizes.
const (
	defaultListPageSize = 100
	maxListPageSize     = 1000
)

// defaultLintProfiles are the provider profiles registration lints against
// unless WithLintProfiles says otherwise (registry.DefaultLintProfiles).
var defaultLintProfiles = registry.DefaultLintProfiles()

// registryServiceOption configures the ToolRegistryService.
type registryServiceOption func(*registryService)

// WithStrictLint refuses, for every registration, a schema with
// error-severity lint findings (as if each request set strict_lint).
func WithStrictLint(strict bool) registryServiceOption {
	return func(s *registryService) { s.strictLint = strict }
}

// WithLintProfiles sets the provider profiles registration lints against
// (default: openai, anthropic, gemini).
func WithLintProfiles(profiles ...lint.Profile) registryServiceOption {
	return func(s *registryService) {
		if len(profiles) > 0 {
			s.lintProfiles = append([]lint.Profile(nil), profiles...)
		}
	}
}

// WithToolFilter hides every tool for which visible returns false (e.g.
// tools the caller may not invoke) from ListTools, GetTool (NotFound, as
// for a tool that does not exist: a hidden tool's existence is not told)
// and WatchTools (its events are skipped). visible must be cheap: it runs
// for each candidate tool of a page and each watch event.
func WithToolFilter(visible func(ctx context.Context, name string) bool) registryServiceOption {
	return func(s *registryService) { s.visible = visible }
}

// WithBackendFilter blanks the backend target of every tool GetTool,
// ListTools and WatchTools return to a caller for whom shows returns false
// (pipeline.SeesBackends: callers without the admin role).
func WithBackendFilter(shows func(ctx context.Context) bool) registryServiceOption {
	return func(s *registryService) { s.showBackend = shows }
}

// WithOptionalNulls tells ExportTools which tools the policy drops
// optional nulls for (pipeline.DropsOptionalNulls), so an openai-strict
// export can name the tools whose nullable optional properties the gateway
// would refuse.
func WithOptionalNulls(drops func(ctx context.Context, tool string) bool) registryServiceOption {
	return func(s *registryService) { s.dropsNulls = drops }
}

// registryService implements ToolRegistryService over a started registry.
// Reads (Get) and writes go to the registry's store; ListTools is served
// from the live snapshot; WatchTools streams the store's events.
type registryService struct {
	gatewayv1.UnimplementedToolRegistryServiceServer

	reg          *registry.Registry
	strictLint   bool
	lintProfiles []lint.Profile
	visible      func(ctx context.Context, name string) bool
	showBackend  func(ctx context.Context) bool
	dropsNulls   func(ctx context.Context, tool string) bool
	stats        *repairstats.Stats
	search       *search.Index
	// userTokens is the user-consent mode in force (registry_usertokens.go).
	userTokens func() *identity.Consent

	stop     chan struct{} // closed by Close: ends every WatchTools stream
	stopOnce sync.Once
	watches  *watchSlots // the open WatchTools streams (registry_watchlimit.go)
}

func newRegistryService(reg *registry.Registry, opts ...registryServiceOption) *registryService {
	s := &registryService{reg: reg, lintProfiles: defaultLintProfiles, stop: make(chan struct{}), watches: newWatchSlots(WatchLimits{})}
	for _, o := range opts {
		o(s)
	}
	return s
}

// registerRegistryService registers the ToolRegistryService on gs. Call the
// returned service's Close before gs.GracefulStop: WatchTools streams never
// end on their own, and GracefulStop waits for every stream.
func registerRegistryService(gs grpc.ServiceRegistrar, reg *registry.Registry, opts ...registryServiceOption) *registryService {
	s := newRegistryService(reg, opts...)
	gs.RegisterService(decodeFailuresAreInvalid(&gatewayv1.ToolRegistryService_ServiceDesc), s)
	return s
}

// RegisterRegistryService is registerRegistryService for callers outside
// the package (a gateway assembled by hand, the flowdropctl tests). Call
// stop before stopping gs gracefully.
func RegisterRegistryService(gs grpc.ServiceRegistrar, reg *registry.Registry, opts ...registryServiceOption) (stop func()) {
	return registerRegistryService(gs, reg, opts...).Close
}

// Close ends every WatchTools stream (Unavailable, naming the revision to
// resume from). It is safe to call more than once.
func (s *registryService) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
}

// requestFieldError is a request field that is missing or malformed.
type requestFieldError struct{ field, reason string }

func (e *requestFieldError) Error() string { return e.field + " " + e.reason }

// RegisterTool creates or updates a tool. The schema must compile; lint
// findings come back as warnings, or refuse the tool under strict lint.
func (s *registryService) RegisterTool(ctx context.Context, req *gatewayv1.RegisterToolRequest) (*gatewayv1.RegisterToolResponse, error) {
	t, err := toolFromProto(req.GetTool())
	if err != nil {
		return nil, statusError(err)
	}
	var expected *int64
	if req.ExpectedRevision != nil {
		e := req.GetExpectedRevision()
		if e < 0 {
			return nil, statusError(&requestFieldError{field: "expected_revision", reason: fmt.Sprintf("must not be negative, got %d", e)})
		}
		expected = &e
	}
	// Admission (registry.Admission) compiles, lints and checks
	// compatibility: findings come back as warnings, or refuse the tool
	// under strict lint.
	res, err := s.reg.Register(ctx, t, registry.RegisterOptions{
		ExpectedRevision: expected, RequireCompatible: req.GetRequireCompatible(),
		StrictLint: s.strictLint || req.GetStrictLint(), LintProfiles: s.lintProfiles,
	})
	if err != nil {
		return nil, failed(ctx, err)
	}
	return &gatewayv1.RegisterToolResponse{
		Tool:               toolProto(res.Tool),
		Created:            res.Created,
		CompatibilityNotes: compatNotesProto(res.Notes),
		LintFindings:       lintFindingsProto(res.Findings),
	}, nil
}

// GetTool answers from the registry's snapshot, like ListTools (and like
// the calls it serves): it keeps answering while the store is unreachable,
// and the snapshot holds every write this gateway acknowledged
// (read-your-writes). flowdrop_registry_stale_seconds says how current it is.
func (s *registryService) GetTool(ctx context.Context, req *gatewayv1.GetToolRequest) (*gatewayv1.GetToolResponse, error) {
	name := req.GetName()
	if err := checkNameField(name); err != nil {
		return nil, statusError(err)
	}
	if !s.shows(ctx, name) {
		return nil, statusError(pipeline.ToolNotFound(name))
	}
	e, ok := s.reg.Lookup(name)
	if !ok {
		return nil, statusError(pipeline.ToolNotFound(name))
	}
	return &gatewayv1.GetToolResponse{Tool: s.readProto(e.Tool, s.showsBackend(ctx))}, nil
}

// DeleteTool removes a tool, optionally only at an expected revision.
func (s *registryService) DeleteTool(ctx context.Context, req *gatewayv1.DeleteToolRequest) (*gatewayv1.DeleteToolResponse, error) {
	name := req.GetName()
	if err := checkNameField(name); err != nil {
		return nil, statusError(err)
	}
	var expected *int64
	if req.ExpectedRevision != nil {
		e := req.GetExpectedRevision()
		if e < 0 {
			return nil, statusError(&requestFieldError{field: "expected_revision", reason: fmt.Sprintf("must not be negative, got %d", e)})
		}
		expected = &e
	}
	if err := s.reg.Delete(ctx, name, expected); err != nil {
		return nil, failed(ctx, notFoundAsTool(name, err))
	}
	return &gatewayv1.DeleteToolResponse{}, nil
}

// checkNameField refuses a name no tool can have, so a typo such as an
// empty argument reads as bad input rather than "not found".
func checkNameField(name string) error {
	if name == "" {
		return &requestFieldError{field: "name", reason: "is required"}
	}
	if registry.ValidateName(name) != nil {
		return &requestFieldError{field: "name", reason: fmt.Sprintf("%q is not a tool name: must match %s", policy.Bound(name), registry.NamePattern)}
	}
	return nil
}

// notFoundAsTool names the tool in a store's bare ErrNotFound.
func notFoundAsTool(name string, err error) error {
	if errors.Is(err, registry.ErrNotFound) {
		return pipeline.ToolNotFound(name)
	}
	return err
}

// pageTokenPrefix versions the page token so its format can change.
const pageTokenPrefix = "v1:"

// ListTools pages through the live snapshot in name order. The page token
// is the last name returned, so paging stays correct while tools are added
// or removed: nothing is repeated, and only tools inserted behind the
// cursor are missed.
func (s *registryService) ListTools(ctx context.Context, req *gatewayv1.ListToolsRequest) (*gatewayv1.ListToolsResponse, error) {
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
	prefix, labels := req.GetNamePrefix(), req.GetLabels()
	snap := s.reg.Snapshot()
	inBundle, err := bundleFilter(snap, req.GetBundle())
	if err != nil {
		return nil, statusError(err)
	}
	// Start past the cursor and at the prefix: names are sorted, so every
	// match is at or after both. The snapshot is walked in place: a page
	// costs what it scans, not a copy of the registry.
	resp := &gatewayv1.ListToolsResponse{}
	backends := s.showsBackend(ctx)
	for e := range snap.Since(max(after, prefix)) {
		t := &e.Tool
		if t.Name == after {
			continue
		}
		if !strings.HasPrefix(t.Name, prefix) {
			break // sorted: no later name has the prefix either
		}
		if !labelsMatch(t.Labels, labels) || !inBundle(t) || !s.shows(ctx, t.Name) {
			continue
		}
		if len(resp.Tools) == size {
			// One more match exists: hand out a cursor for it.
			resp.NextPageToken = encodePageToken(resp.Tools[size-1].GetName())
			break
		}
		resp.Tools = append(resp.Tools, s.readProto(*t, backends))
	}
	return resp, nil
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

func encodePageToken(lastName string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(pageTokenPrefix + lastName))
}

// maxPageTokenLen bounds a page token: one tool name's (registry.NamePattern).
var maxPageTokenLen = base64.RawURLEncoding.EncodedLen(len(pageTokenPrefix) + 64)

func decodePageToken(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	if len(tok) > maxPageTokenLen {
		return "", &requestFieldError{field: "page_token", reason: "is not a token this server issued; start again without one"}
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	name, ok := strings.CutPrefix(string(raw), pageTokenPrefix)
	if err != nil || !ok || !registry.ValidName(name) {
		return "", &requestFieldError{field: "page_token", reason: "is not a token this server issued; start again without one"}
	}
	return name, nil
}

// WatchTools streams registry changes, within the open-stream bounds
// (WithWatchLimits). start_revision 0 first sends every
// current tool as a PUT (from one consistent store list), then the events
// after that list; otherwise the events after start_revision. The stream
// ends when the client cancels, or with Unavailable naming the revision to
// resume from when the gateway stops or the store watch is lost.
func (s *registryService) WatchTools(req *gatewayv1.WatchToolsRequest, stream grpc.ServerStreamingServer[gatewayv1.WatchToolsResponse]) error {
	after := req.GetStartRevision()
	if after < 0 {
		return statusError(&requestFieldError{field: "start_revision", reason: fmt.Sprintf("must not be negative, got %d", after)})
	}
	release, err := s.watches.acquire(stream.Context())
	if err != nil {
		return statusError(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel() // ends the store watch and its goroutines

	// Subscribe before reading so a registry Close during the list is seen.
	changes, unsubscribe := s.reg.Changes()
	defer unsubscribe()
	backends := s.showsBackend(ctx)

	if after == 0 {
		tools, rev, err := s.reg.List(ctx)
		if err != nil {
			return failed(ctx, err)
		}
		for _, t := range tools {
			if !s.shows(ctx, t.Name) {
				continue
			}
			if err := stream.Send(&gatewayv1.WatchToolsResponse{
				Type: gatewayv1.WatchToolsResponse_EVENT_TYPE_PUT, Tool: s.readProto(t, backends), Revision: t.Revision,
			}); err != nil {
				return err
			}
		}
		after = rev
	}
	events, err := s.reg.Watch(ctx, after)
	if err != nil {
		if errors.Is(err, registry.ErrCompacted) {
			err = fmt.Errorf("start_revision %d is older than the history the registry store keeps (%w); watch from 0 to start with the current tools", after, registry.ErrCompacted)
		}
		return statusError(err)
	}
	resume := func(why string) error {
		return status.Errorf(codes.Unavailable, "%s; resume watching from revision %d", why, after)
	}
	for {
		select {
		case <-ctx.Done():
			return statusError(ctx.Err())
		case <-s.stop:
			return resume("gateway shutting down")
		case _, ok := <-changes:
			if !ok {
				return resume("registry closed")
			}
			// A snapshot change: the store watch carries the event itself.
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return statusError(ctx.Err())
				}
				return resume("registry store watch lost")
			}
			// WatchTools carries tools; a bundle's event only moves the revision.
			if ev.Bundle == nil && s.shows(ctx, ev.Tool.Name) {
				if err := stream.Send(watchEventProto(ev, backends)); err != nil {
					return err
				}
			}
			after = ev.Revision
		}
	}
}

// shows reports whether the caller in ctx may see the tool (WithToolFilter).
// dropsOptionalNulls reports whether the policy removes the tool's optional
// nulls (WithOptionalNulls); without one, none are (the default policy).
func (s *registryService) dropsOptionalNulls(ctx context.Context, tool string) bool {
	return s.dropsNulls != nil && s.dropsNulls(ctx, tool)
}

func (s *registryService) shows(ctx context.Context, name string) bool {
	return s.visible == nil || s.visible(ctx, name)
}

// showsBackend reports whether the caller in ctx sees backend targets
// (WithBackendFilter).
func (s *registryService) showsBackend(ctx context.Context) bool {
	return s.showBackend == nil || s.showBackend(ctx)
}

// readProto is a tool as a registry read returns it: without its backend
// target unless the caller may see it.
func (s *registryService) readProto(t registry.Tool, backend bool) *gatewayv1.Tool {
	p := toolProto(t)
	if !backend {
		p.Backend = ""
		hideSpecTarget(p)
	}
	return p
}

func watchEventProto(ev registry.Event, backend bool) *gatewayv1.WatchToolsResponse {
	out := &gatewayv1.WatchToolsResponse{Revision: ev.Revision}
	switch ev.Type {
	case registry.EventPut:
		out.Type = gatewayv1.WatchToolsResponse_EVENT_TYPE_PUT
		out.Tool = toolProto(ev.Tool)
		if !backend {
			out.Tool.Backend = ""
			hideSpecTarget(out.Tool)
		}
	case registry.EventDelete:
		out.Type = gatewayv1.WatchToolsResponse_EVENT_TYPE_DELETE
		out.Tool = &gatewayv1.Tool{Name: ev.Tool.Name, Revision: ev.Revision}
	}
	return out
}

func lintFindingsProto(fs []lint.Finding) []*gatewayv1.LintFinding {
	if len(fs) == 0 {
		return nil
	}
	out := make([]*gatewayv1.LintFinding, len(fs))
	for i, f := range fs {
		out[i] = &gatewayv1.LintFinding{Profile: string(f.Profile), Path: f.Path, Message: f.Rule + ": " + f.Message, Severity: string(f.Severity)}
	}
	return out
}
