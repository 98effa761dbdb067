package registry

import (
	"context"
	"errors"
	"time"
)

// HistoryDepth is how many definitions of a tool a store keeps (the
// current one included): older ones are dropped in the write that makes
// the newest, so a tool's history costs at most HistoryDepth records.
const HistoryDepth = 20

// ErrHistoryNotKept is Registry.History's answer over a store that keeps
// no revision history (it does not implement Historian).
var ErrHistoryNotKept = errors.New("revision history not kept by this store")

// ToolRevision is one stored definition of a tool.
type ToolRevision struct {
	// Revision is the store revision of the write (Tool.Revision too).
	Revision int64
	// Time is when the writing gateway stored it (its clock).
	Time time.Time
	// Writer is the subject of the caller that wrote it, "" when the write
	// path knows none (a tools file, an upstream import).
	Writer string
	Tool   Tool
}

// Historian is a Store that keeps each tool's last HistoryDepth
// definitions, written in the same transaction as the tool. Deleting a
// tool deletes its history in that transaction too: what a store holds
// stays bounded by its live tools (the audit log keeps the deletion).
type Historian interface {
	// History returns the tool's kept definitions, newest first, at most
	// limit (limit <= 0 or above HistoryDepth: HistoryDepth). A tool
	// without history (never written, deleted) has none: nil, no error.
	History(ctx context.Context, name string, limit int) ([]ToolRevision, error)
}

// HistoryLimit is limit as Historian.History reads it.
func HistoryLimit(limit int) int {
	if limit <= 0 || limit > HistoryDepth {
		return HistoryDepth
	}
	return limit
}

type writerKey struct{}

// WithWriter names the subject writing through ctx: a store's history
// records it with the definition.
func WithWriter(ctx context.Context, subject string) context.Context {
	return context.WithValue(ctx, writerKey{}, subject)
}

// WriterFrom is the subject WithWriter put on ctx ("" when none).
func WriterFrom(ctx context.Context) string {
	s, _ := ctx.Value(writerKey{}).(string)
	return s
}

// History is the tool's revision history from the store, newest first;
// ErrHistoryNotKept when the store keeps none.
func (r *Registry) History(ctx context.Context, name string, limit int) ([]ToolRevision, error) {
	h, ok := r.store.(Historian)
	if !ok {
		return nil, ErrHistoryNotKept
	}
	return h.History(ctx, name, limit)
}
