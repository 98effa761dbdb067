package grpcapi

import (
	"context"
	"errors"
	"fmt"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
)

// The registry service's bundles (registry.Bundle): CRUD for admins, and
// the bundle filter ListTools and ExportTools take.

// PutBundle creates or replaces a bundle; the definition is checked
// (registry.CompileBundle) before anything is written.
func (s *registryService) PutBundle(ctx context.Context, req *gatewayv1.PutBundleRequest) (*gatewayv1.PutBundleResponse, error) {
	pb := req.GetBundle()
	if pb == nil {
		return nil, statusError(&requestFieldError{field: "bundle", reason: "is required"})
	}
	expected, err := expectedRevision(req.ExpectedRevision)
	if err != nil {
		return nil, statusError(err)
	}
	res, err := s.reg.PutBundle(ctx, bundleFromProto(pb), expected)
	if err != nil {
		return nil, failed(ctx, err)
	}
	return &gatewayv1.PutBundleResponse{Bundle: bundleProto(res.Bundle), Created: res.Created}, nil
}

// GetBundle reads a bundle from the store.
func (s *registryService) GetBundle(ctx context.Context, req *gatewayv1.GetBundleRequest) (*gatewayv1.GetBundleResponse, error) {
	name := req.GetName()
	if err := checkBundleField("name", name); err != nil {
		return nil, statusError(err)
	}
	b, err := s.reg.GetBundle(ctx, name)
	if err != nil {
		return nil, failed(ctx, namedBundle(name, err))
	}
	return &gatewayv1.GetBundleResponse{Bundle: bundleProto(b)}, nil
}

// ListBundles reads every bundle from the store, in name order. Bundles
// are few (each is an endpoint an admin made): no paging.
func (s *registryService) ListBundles(ctx context.Context, _ *gatewayv1.ListBundlesRequest) (*gatewayv1.ListBundlesResponse, error) {
	bs, _, err := s.reg.ListBundles(ctx)
	if err != nil {
		return nil, failed(ctx, err)
	}
	out := &gatewayv1.ListBundlesResponse{Bundles: make([]*gatewayv1.Bundle, 0, len(bs))}
	for _, b := range bs {
		out.Bundles = append(out.Bundles, bundleProto(b))
	}
	return out, nil
}

// DeleteBundle removes a bundle, optionally only at an expected revision.
func (s *registryService) DeleteBundle(ctx context.Context, req *gatewayv1.DeleteBundleRequest) (*gatewayv1.DeleteBundleResponse, error) {
	name := req.GetName()
	if err := checkBundleField("name", name); err != nil {
		return nil, statusError(err)
	}
	expected, err := expectedRevision(req.ExpectedRevision)
	if err != nil {
		return nil, statusError(err)
	}
	if err := s.reg.DeleteBundle(ctx, name, expected); err != nil {
		return nil, failed(ctx, namedBundle(name, err))
	}
	return &gatewayv1.DeleteBundleResponse{}, nil
}

// bundleFilter is the selection of the request's bundle field in snap
// ("": every tool), or NotFound for a bundle snap does not serve.
func bundleFilter(snap *registry.Snapshot, name string) (func(*registry.Tool) bool, error) {
	if name == "" {
		return func(*registry.Tool) bool { return true }, nil
	}
	if err := checkBundleField("bundle", name); err != nil {
		return nil, err
	}
	b, ok := snap.Bundle(name)
	if !ok {
		return nil, namedBundle(name, registry.ErrBundleNotFound)
	}
	return b.Selects, nil
}

// checkBundleField refuses a name no bundle can have.
func checkBundleField(field, name string) error {
	if name == "" {
		return &requestFieldError{field: field, reason: "is required"}
	}
	if !registry.ValidBundleName(name) {
		return &requestFieldError{field: field, reason: fmt.Sprintf("%q is not a bundle name: must match %s", policy.Bound(name), registry.NamePattern)}
	}
	return nil
}

// namedBundle names the bundle (checked: bounded) in a bare ErrBundleNotFound.
func namedBundle(name string, err error) error {
	if errors.Is(err, registry.ErrBundleNotFound) {
		return fmt.Errorf("bundle %q: %w", name, registry.ErrBundleNotFound)
	}
	return err
}

func expectedRevision(v *int64) (*int64, error) {
	if v == nil {
		return nil, nil
	}
	if *v < 0 {
		return nil, &requestFieldError{field: "expected_revision", reason: fmt.Sprintf("must not be negative, got %d", *v)}
	}
	e := *v
	return &e, nil
}

func bundleFromProto(p *gatewayv1.Bundle) registry.Bundle {
	return registry.Bundle{Name: p.GetName(), Description: p.GetDescription(), Tools: p.GetTools(), Globs: p.GetGlobs(),
		LabelSelectors: p.GetLabelSelectors(), Discovery: registry.Discovery(p.GetDiscovery())}
}

func bundleProto(b registry.Bundle) *gatewayv1.Bundle {
	return &gatewayv1.Bundle{Name: b.Name, Description: b.Description, Tools: b.Tools, Globs: b.Globs,
		LabelSelectors: b.LabelSelectors, Discovery: string(b.Discovery), Revision: b.Revision}
}
