package toolcodec

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowdrop/gateway/registry"
)

// HistoryVersion is the format version of a stored revision record;
// DecodeRevision refuses any other.
const HistoryVersion = 1

// revisionRecord is a registry.ToolRevision: the tool in its own
// encoding (Encode), with when and by whom it was written.
type revisionRecord struct {
	V        int             `json:"v"`
	Revision int64           `json:"revision,omitempty"`
	Time     time.Time       `json:"time"`
	Writer   string          `json:"writer,omitempty"`
	Tool     json.RawMessage `json:"tool"`
}

// EncodeRevision returns the stored form of r (r.Revision when non-zero:
// etcd takes it from the key's ModRevision instead).
func EncodeRevision(r registry.ToolRevision) ([]byte, error) {
	t, err := Encode(r.Tool)
	if err != nil {
		return nil, err
	}
	return json.Marshal(revisionRecord{V: HistoryVersion, Revision: r.Revision, Time: r.Time.UTC(), Writer: r.Writer, Tool: t})
}

// DecodeRevision parses a stored revision record.
func DecodeRevision(b []byte) (registry.ToolRevision, error) {
	var rec revisionRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return registry.ToolRevision{}, fmt.Errorf("toolcodec: decode revision record: %w", err)
	}
	if rec.V != HistoryVersion {
		return registry.ToolRevision{}, fmt.Errorf("toolcodec: unsupported revision record format version %d (this build reads version %d)", rec.V, HistoryVersion)
	}
	t, err := Decode(rec.Tool)
	if err != nil {
		return registry.ToolRevision{}, err
	}
	t.Revision = rec.Revision
	return registry.ToolRevision{Revision: rec.Revision, Time: rec.Time, Writer: rec.Writer, Tool: t}, nil
}
