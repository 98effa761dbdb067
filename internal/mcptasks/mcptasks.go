// Package mcptasks keeps who owns which task the MCP face handed out
// (MCP tasks, 2025-11-25): the gateway's task id → the upstream task it
// stands for (the tool it was made through, the upstream session it lives
// in, the upstream's own id), the caller that made it, and when it
// expires. A fleet keeps the records in Redis (internal/redisstate), so a
// task made through one replica is reached through any; one node in
// memory (Memory). Records are bounded in size (Check) and in number per
// owner (MaxPerOwner) and in all (a store's own bound), and go at expiry.
package mcptasks

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Record is one task handed out.
type Record struct {
	// Owner is the hash of the caller that made it (OwnerOf).
	Owner string `json:"o"`
	// Tool is the gateway tool the task was made through.
	Tool string `json:"t"`
	// Session and UpstreamID are the upstream's: its session, its task id.
	Session    string `json:"s"`
	UpstreamID string `json:"u"`
	// Dialect is how the upstream's task is reached: "" its 2025-11-25
	// task requests in Session, "ext" 2026-07-28's tasks extension
	// (mcpupstream.DialectTasksExtension; Session unused).
	Dialect string `json:"d,omitempty"`
	// CreatedAt is the upstream's creation time (ISO 8601, as it said).
	CreatedAt string `json:"c,omitempty"`
	// Expires is when the record goes (Unix ms).
	Expires int64 `json:"e"`
	// Input is the relay of the upstream's requests for input (nil: none).
	Input *Input `json:"i,omitempty"`
}

// Input is what the relay of a task's requests for input to a caller of
// the 2026-07-28 tasks extension keeps between its caller's requests (any
// replica serves them): who reads the upstream's tasks/result stream now,
// and the requests read from it that await an answer.
type Input struct {
	// ReaderUntil is when (Unix ms) the replica reading the stream stops;
	// Reader its token (a lapsed reader's record is another's to take).
	ReaderUntil int64  `json:"ru,omitempty"`
	Reader      string `json:"rt,omitempty"`
	// Can are the kinds of input the caller declared it can answer when
	// the reader started (its per-request client capabilities).
	Can []string `json:"k,omitempty"`
	// Pending are the requests read and not yet answered, in order.
	Pending []Pending `json:"p,omitempty"`
	// Refused says why the last request refused for the caller was (the
	// caller is shown it while the task runs).
	Refused string `json:"rf,omitempty"`
}

// Pending is one request for input the upstream made, read from its
// stream, under the key the caller answers it by.
type Pending struct {
	// Key is the gateway's key in the caller's inputRequests.
	Key string `json:"k"`
	// ID is the upstream's request id (JSON); Method and Params its
	// request as made.
	ID      json.RawMessage `json:"i"`
	Method  string          `json:"m"`
	Params  json.RawMessage `json:"p"`
	Expires int64           `json:"e"` // Unix ms
}

// Entry is a record under its gateway task id.
type Entry struct {
	ID string
	Record
}

// Store keeps the records.
type Store interface {
	// Put stores r under id until r.Expires: ErrFull when r's owner has
	// MaxPerOwner live tasks (or the store is full).
	Put(ctx context.Context, id string, r Record) error
	// Get is the live record under id (false: none, or expired).
	Get(ctx context.Context, id string) (Record, bool, error)
	// List is owner's live records, at most MaxPerOwner, oldest first.
	List(ctx context.Context, owner string) ([]Entry, error)
	// Delete removes the record under id, whoever owns it.
	Delete(ctx context.Context, id string) error
	// Update changes the live record under id with f, atomically (f may
	// run more than once; its error stops the update and is Update's),
	// keeping its expiry; false: no live record.
	Update(ctx context.Context, id string, f func(*Record) error) (Record, bool, error)
}

// Bounds.
const (
	// MaxPerOwner bounds one caller's live tasks.
	MaxPerOwner = 256
	// MaxFieldBytes bounds each of a record's upstream fields.
	MaxFieldBytes = 512
	// MaxTTL is the longest a record is kept, whatever the upstream says.
	MaxTTL = 24 * time.Hour
	// MaxPending bounds a task's requests for input awaiting an answer,
	// MaxPendingBytes their params together (pipeline.InputMaxRequests,
	// and pipeline.InputMaxResponseBytes).
	MaxPending      = 16
	MaxPendingBytes = 1 << 20
)

// ErrFull: the owner (or the store) holds as many tasks as it may.
var ErrFull = errors.New("too many live tasks")

// Check refuses a record whose fields are over the bounds or missing.
func (r Record) Check() error {
	switch {
	case r.Owner == "" || r.Tool == "" || r.UpstreamID == "":
		return errors.New("task record: owner, tool and upstream id are required")
	case len(r.Tool) > MaxFieldBytes || len(r.Session) > MaxFieldBytes || len(r.UpstreamID) > MaxFieldBytes || len(r.CreatedAt) > 64:
		return fmt.Errorf("task record: a field is over %d bytes", MaxFieldBytes)
	case r.Dialect != "" && r.Dialect != "ext":
		return fmt.Errorf("task record: unknown dialect %q", r.Dialect)
	}
	if in := r.Input; in != nil {
		if len(in.Pending) > MaxPending || len(in.Can) > 8 || len(in.Reader) > 64 || len(in.Refused) > 1024 {
			return fmt.Errorf("task record: over %d requests for input", MaxPending)
		}
		n := 0
		for _, p := range in.Pending {
			n += len(p.Params)
			if len(p.Key) > 64 || len(p.ID) > 256 || len(p.Method) > 64 {
				return errors.New("task record: a request for input's key, id or method is over its bound")
			}
		}
		if n > MaxPendingBytes {
			return fmt.Errorf("task record: the requests for input are over %d bytes", MaxPendingBytes)
		}
	}
	return nil
}

// Encode and Decode are a record's stored form.
func Encode(r Record) ([]byte, error) { return json.Marshal(r) }

func Decode(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("task record: %w", err)
	}
	return r, nil
}

// NewID is a fresh gateway task id: 128 random bits, so one caller cannot
// guess another's, and nothing of the upstream in it.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "fdt-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidID reports whether id has NewID's form (anything else is no task).
func ValidID(id string) bool {
	if len(id) != 4+22 || id[:4] != "fdt-" {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(id[4:])
	return err == nil
}

// OwnerOf is the owner hash of a caller authenticated by method as subject.
func OwnerOf(method, subject string) string {
	h := sha256.New()
	for _, s := range []string{method, subject} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// clone is r with its own Input (f of Update changes the copy only).
func (r Record) clone() Record {
	if r.Input != nil {
		in := *r.Input
		in.Can = slices.Clone(in.Can)
		in.Pending = slices.Clone(in.Pending)
		r.Input = &in
	}
	return r
}
