package memstore

import (
	"context"
	"slices"

	"github.com/flowdrop/gateway/registry"
)

// record appends rev to its tool's history, dropping the oldest past
// registry.HistoryDepth. Caller holds s.mu.
func (s *Store) record(rev registry.ToolRevision) {
	h := append(s.history[rev.Tool.Name], rev)
	if n := len(h) - registry.HistoryDepth; n > 0 {
		h = slices.Delete(h, 0, n)
	}
	s.history[rev.Tool.Name] = h
}

// History returns the tool's kept definitions, newest first.
func (s *Store) History(ctx context.Context, name string, limit int) ([]registry.ToolRevision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, registry.ErrClosed
	}
	h := s.history[name]
	limit = min(registry.HistoryLimit(limit), len(h))
	if limit == 0 {
		return nil, nil
	}
	out := make([]registry.ToolRevision, 0, limit)
	for i := len(h) - 1; len(out) < limit; i-- {
		out = append(out, h[i])
	}
	return out, nil
}
