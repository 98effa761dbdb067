package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowdrop/gateway/normalize"
)

// Audit decisions.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionError = "error"
)

// ClientConsole is the audit line's client for a call the admin console
// made for its logged-in operator (server/console's Invoke).
const ClientConsole = "console"

// AuditRecord is one JSON line per call. It has no field for headers or
// credentials, so they cannot be logged by construction.
type AuditRecord struct {
	Time          time.Time `json:"time"` // encoded RFC 3339 with nanoseconds
	CallerSubject string    `json:"caller_subject"`
	CallerMethod  string    `json:"caller_method"`
	// CallerRoles are the caller's roles as authenticated (a JWT's from
	// its token), so a policy replay judges the call as it was made
	// (server/replay). At most maxAuditRoles, each bounded.
	CallerRoles []string `json:"caller_roles,omitempty"`
	// Client names the program that made the call when the gateway itself
	// is that program: ClientConsole for the console's try-it Invoke. A
	// face's caller-chosen names (MCP clientInfo) are not recorded here.
	Client string `json:"client,omitempty"`
	Tool   string `json:"tool"`
	// Target is the tool an alias call went to (Tool is the alias called);
	// empty for a call to a tool by its own name.
	Target   string `json:"target,omitempty"`
	CallID   string `json:"call_id,omitempty"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// Rule names the CEL rule that refused the call (reasons rule-denied
	// and rule-error): a rule's name is the policy file's, not a caller's.
	Rule        string        `json:"rule,omitempty"`
	Repairs     []AuditRepair `json:"repairs,omitempty"`
	Validation  string        `json:"validation,omitempty"` // "ok" | "failed" | "" (not reached)
	Violations  []string      `json:"violations,omitempty"`
	BackendCode string        `json:"backend_code,omitempty"`
	// IdentityMode and IdentitySubject are the identity the backend was
	// sent (server/identity: static, passthrough, gateway-signed,
	// token-exchange) and the subject it names; never the token.
	IdentityMode    string          `json:"identity_mode,omitempty"`
	IdentitySubject string          `json:"identity_subject,omitempty"`
	LatencyMS       float64         `json:"latency_ms"`
	ArgsSent        json.RawMessage `json:"args_sent,omitempty"`
	ArgsRepaired    json.RawMessage `json:"args_repaired,omitempty"`
	// ShadowDenials are what shadow-mode entries would have refused; the
	// call proceeded past them (its decision is its enforced one).
	ShadowDenials []ShadowDenial `json:"shadow_denials,omitempty"`
	// IdempotencyKey is the call's idempotency key (bounded), if it had one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Replayed: the result was an earlier call's stored outcome under the
	// same key; the backend was not called (backend_code is empty).
	Replayed bool `json:"replayed,omitempty"`
	// RecordsDropped is set on a ReasonAuditGap line only.
	RecordsDropped int64 `json:"records_dropped,omitempty"`
	// Operation is set on a registry write's line: the method
	// (RegisterTool, DeleteTool); Tool is the tool it wrote (the bundle, for
	// PutBundle and DeleteBundle), Revision the revision a write made. And on an MCP federated request's line:
	// the MCP method (resources/read, prompts/get); Tool is the resource's
	// gateway URI (its query redacted) or the prompt's gateway name.
	Operation string `json:"operation,omitempty"`
	Revision  int64  `json:"revision,omitempty"`
	// InputRound is set on a call that is a round of an MCP multi
	// round-trip call (its number, 1 for the first); InputAsked the kinds
	// of input its upstream asked the caller for in this round
	// (elicitation, sampling, roots) and InputAnswered how many of the
	// caller's answers it relayed. What was asked and answered is never
	// logged: a form's questions and a user's answers may be sensitive.
	InputRound    int      `json:"input_round,omitempty"`
	InputAsked    []string `json:"input_asked,omitempty"`
	InputAnswered int      `json:"input_answered,omitempty"`
	// InputRelayed is, on a call before MCP 2026-07-28, each request for
	// input its upstream sent on the call's stream and the gateway relayed
	// to the caller, by kind (elicitation, sampling), in order: the kind
	// only, as above.
	InputRelayed []string `json:"input_relayed,omitempty"`

	// argsEncoded: ArgsSent and ArgsRepaired are SetArgs's own encoding,
	// which the line splices in as they are; argsBuf the pooled buffer they
	// are in (ReleaseArgs).
	argsEncoded bool
	argsBuf     *auditBuf
}

// ShadowDenial is one refusal a shadow-mode rule or authz entry would
// have made: the policy reason, the rule's name (rules only), and the
// message the caller would have got.
type ShadowDenial struct {
	Reason  string `json:"reason"`
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message"`
}

// AuditRepair is one normalization repair.
type AuditRepair struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// RepairsFromReport converts a normalize report for the audit record.
func RepairsFromReport(r normalize.Report) []AuditRepair {
	if len(r.Repairs) == 0 {
		return nil
	}
	out := make([]AuditRepair, len(r.Repairs))
	for i, rp := range r.Repairs {
		out[i] = AuditRepair{Path: rp.Path, Kind: rp.Kind.String()}
	}
	return out
}

// maxAuditRoles bounds the roles one record lists (the count of the rest
// is noted; a replay then cannot tell the caller's roles).
const maxAuditRoles = 32

// maxAuditViolations bounds the violations one record lists (the count
// of the rest is noted): a model can make every element of a huge array
// fail.
const maxAuditViolations = 16

// bound cuts the caller-supplied strings of the record to bounded
// prefixes (Bound), so one call writes a bounded line. The arguments are
// bounded by the argument limits, not here.
func (a *AuditRecord) bound() {
	a.CallerSubject, a.Tool, a.CallID = Bound(a.CallerSubject), Bound(a.Tool), Bound(a.CallID)
	a.IdempotencyKey = Bound(a.IdempotencyKey)
	a.IdentitySubject, a.Client = Bound(a.IdentitySubject), Bound(a.Client)
	if len(a.CallerRoles) > maxAuditRoles || slices.ContainsFunc(a.CallerRoles, func(r string) bool { return len(r) > MaxRecordedBytes }) {
		// A token's role claim is the issuer's to fill: bounded like the
		// other caller-supplied strings (the caller's slice stays as it was).
		roles := make([]string, 0, maxAuditRoles+1)
		for _, r := range a.CallerRoles[:min(len(a.CallerRoles), maxAuditRoles)] {
			roles = append(roles, Bound(r))
		}
		if n := len(a.CallerRoles); n > maxAuditRoles {
			roles = append(roles, "… and "+strconv.Itoa(n-maxAuditRoles)+" more")
		}
		a.CallerRoles = roles
	}
	if n := len(a.Violations); n > 0 {
		keep := min(n, maxAuditViolations)
		vs := make([]string, keep, keep+1)
		for i := range keep {
			vs[i] = BoundTo(a.Violations[i], 4*MaxRecordedBytes)
		}
		if n > keep {
			vs = append(vs, "… and "+strconv.Itoa(n-keep)+" more")
		}
		a.Violations = vs
	}
	cloned := false
	for i, r := range a.Repairs {
		if len(r.Path) > MaxRecordedBytes {
			if !cloned { // the caller's slice stays as it was
				a.Repairs, cloned = slices.Clone(a.Repairs), true
			}
			a.Repairs[i].Path = Bound(r.Path)
		}
	}
}

// MarshalJSON writes Time as RFC 3339 with nanoseconds in UTC.
func (a AuditRecord) MarshalJSON() ([]byte, error) {
	type plain AuditRecord
	return json.Marshal(struct {
		Time string `json:"time"`
		plain
	}{Time: a.Time.UTC().Format(time.RFC3339Nano), plain: plain(a)})
}

// lineSizeHint is about the length of the record's line, so appendLine
// writes it into one allocation: the member names and fixed parts (~300
// bytes with every optional member a call line has) plus what varies.
// An undersized buffer doubles once, a copy of the whole line per call.
func (a *AuditRecord) lineSizeHint() int {
	n := 320 + len(a.CallerSubject) + len(a.CallerMethod) + len(a.Client) + len(a.Tool) + len(a.Target) + len(a.CallID) + len(a.Reason) + len(a.Rule) +
		len(a.BackendCode) + len(a.IdentityMode) + len(a.IdentitySubject) + len(a.IdempotencyKey) + len(a.Operation) +
		len(a.ArgsSent) + len(a.ArgsRepaired)
	for _, r := range a.Repairs {
		n += 24 + len(r.Path) + len(r.Kind)
	}
	for _, r := range a.CallerRoles {
		n += 4 + len(r)
	}
	for _, v := range a.Violations {
		n += 4 + len(v)
	}
	return n
}

// line is the record's JSON line, newline included. The arguments SetArgs
// encoded go in as they are; others (set directly) are checked and
// compacted by encoding/json, as before.
func (a AuditRecord) line() ([]byte, error) {
	return a.appendTo(make([]byte, 0, a.lineSizeHint()))
}

// appendTo appends the record's line (line) to b.
func (a *AuditRecord) appendTo(b []byte) ([]byte, error) {
	if a.argsEncoded || (a.ArgsSent == nil && a.ArgsRepaired == nil) {
		line, err := a.appendLine(b)
		if err != nil {
			return nil, fmt.Errorf("audit: encoding record: %w", err)
		}
		return line, nil
	}
	line, err := json.Marshal(*a) // a copy: the pointer does not escape on the hot path
	if err != nil {
		return nil, fmt.Errorf("audit: encoding record: %w", err)
	}
	b = append(b, line...)
	return append(b, '\n'), nil
}

// ErrAuditDropped is returned by Write when the queue is full.
var ErrAuditDropped = errors.New("audit: queue full, record dropped")

// ErrAuditUnwritable is returned by WriteWait when the record could not be
// written (the file's error is reported to OnError, never to a caller: it
// names the path).
var ErrAuditUnwritable = errors.New("audit: record not written")

// ReasonAuditGap is the reason of the line a sink writes when writes work
// again after failing: records_dropped says how many records are missing
// before it.
const ReasonAuditGap = "audit-gap"

// AuditSinkOptions configures an AuditSink.
type AuditSinkOptions struct {
	// QueueSize bounds records waiting to be written (default 4096). Write
	// never blocks: when the queue is full the record is dropped and counted,
	// so a stuck disk cannot stall calls.
	QueueSize int
	// RotateBytes rotates a file sink when it grows past this size (0: never).
	RotateBytes int64
	// KeepRotated, when positive, keeps only that many rotated files (the
	// newest); KeepRotatedFor, when positive, removes rotated files older
	// than it (by the time in their name). Both are applied after each
	// rotation; with neither, every rotated file is kept.
	KeepRotated    int
	KeepRotatedFor time.Duration
	// OnError is told about write, sync and rotation errors (never with
	// record contents), at most once per 10 s: suppressed is how many
	// failures were not reported since the last call, so a full disk under
	// load makes one log line, not one per call.
	OnError func(err error, suppressed int64)
	// OnDrop is told each time a record is lost (queue full or write failed).
	OnDrop func()
	// OnFail is told when a write fails while the sink was healthy (Healthy
	// turns false); OnRecover when a write succeeds after failures, with
	// the number of records dropped meanwhile. Each transition is told
	// once, in order, from the goroutine that wrote: they must not block.
	OnFail    func()
	OnRecover func(dropped int64)

	now        func() time.Time
	errorEvery time.Duration // default 10s
	retryEvery time.Duration // default 1s
}

// AuditSink writes AuditRecords as JSON lines. Safe for concurrent use.
// Records are queued to one writer goroutine, which writes what queued up
// behind a record in one write(2); a WriteWait finding nothing queued or
// being written writes its line itself instead (see writeNow).
//
// Health: a failed write marks the sink failing (Healthy false) and drops
// the record; a torn partial line is truncated away, so the file stays
// whole lines. While failing, the sink tries every second (and before each
// record) to write a ReasonAuditGap line; once that works it is healthy
// again, and the gap line says how many records are missing.
type AuditSink struct {
	opt     AuditSinkOptions
	q       chan auditItem
	done    chan struct{}
	failed  chan struct{} // writeNow tells the writer a write failed: it retries
	closeMu sync.RWMutex
	closed  bool
	dropped atomic.Int64
	failing atomic.Bool
	// pending counts records queued and not yet written: a line is
	// written by its caller only when it is 0, so no record overtakes one
	// queued before it.
	pending atomic.Int64

	// wmu is held by whoever writes to w: the writer goroutine, or a
	// caller in writeNow. It guards the fields below.
	wmu        sync.Mutex
	w          io.Writer
	f          *os.File // nil for a plain writer
	path       string
	size       int64
	gapDropped int64 // records dropped since the sink started failing

	// Owned by the writer goroutine.
	batch []auditItem // the records of one write
	buf   []byte      // their lines, when more than one

	errMu      sync.Mutex
	lastReport time.Time
	suppressed int64
}

// auditItem is one queued line; done, when set, hears the write's result.
type auditItem struct {
	line *auditBuf // pooled: recycled once written or dropped
	done chan error
}

// waiters recycles WriteWait's result channels (one per waiting call).
var waiters = sync.Pool{New: func() any { return make(chan error, 1) }}

// NewWriterSink writes to w (for example os.Stdout). Close does not close w.
func NewWriterSink(w io.Writer, opt AuditSinkOptions) *AuditSink {
	return startSink(&AuditSink{w: w}, opt)
}

// OpenFileSink appends to path (created 0600). With RotateBytes set, a file
// that grows past it is fsynced, renamed to path.<UTC timestamp> and reopened.
func OpenFileSink(path string, opt AuditSinkOptions) (*AuditSink, error) {
	f, size, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return startSink(&AuditSink{w: f, f: f, path: path, size: size}, opt), nil
}

func openAppend(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	return f, st.Size(), nil
}

func startSink(s *AuditSink, opt AuditSinkOptions) *AuditSink {
	if opt.QueueSize <= 0 {
		opt.QueueSize = 4096
	}
	if opt.now == nil {
		opt.now = time.Now
	}
	if opt.errorEvery <= 0 {
		opt.errorEvery = 10 * time.Second
	}
	if opt.retryEvery <= 0 {
		opt.retryEvery = time.Second
	}
	s.opt = opt
	s.q = make(chan auditItem, opt.QueueSize)
	s.done = make(chan struct{})
	s.failed = make(chan struct{}, 1)
	go s.run()
	return s
}

// Healthy reports whether the last write succeeded (an atomic load: cheap
// enough to check before every call).
func (s *AuditSink) Healthy() bool { return !s.failing.Load() }

// Write queues one record. It never blocks.
func (s *AuditSink) Write(rec AuditRecord) error {
	return s.enqueue(rec, nil)
}

// WriteWait writes one record and returns when it is written: nil, or
// ErrAuditUnwritable, ErrAuditDropped (queue full) or ctx's error. Written
// means the write returned, not that it reached the disk (no fsync per
// record).
func (s *AuditSink) WriteWait(ctx context.Context, rec AuditRecord) error {
	line, err := recordLine(rec)
	if err != nil {
		return err
	}
	if err, written := s.writeNow(line.b); written {
		putAuditBuf(line)
		return err
	}
	done := waiters.Get().(chan error)
	if err := s.enqueueLine(line, done); err != nil {
		waiters.Put(done)
		return err
	}
	select {
	case err := <-done:
		waiters.Put(done)
		return err
	case <-ctx.Done():
		// The writer still sends on done (buffered); it is not reused.
		return ctx.Err()
	}
}

// writeNow writes line in the calling goroutine when no record is queued
// or being written, so it cannot overtake one: at low load a waiting call
// then skips two goroutine hand-offs (to the writer and back), each a
// thread wake-up. Under load the lock is taken or records are pending,
// and the line queues for the writer's batch. written is false when it
// did not write. A write(2) that hangs holds this one caller past its
// deadline; calls behind it wait on the queue with theirs.
func (s *AuditSink) writeNow(line []byte) (err error, written bool) {
	if s.pending.Load() != 0 || !s.wmu.TryLock() {
		return nil, false
	}
	defer s.wmu.Unlock()
	if s.pending.Load() != 0 {
		return nil, false
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errSinkClosed, true
	}
	if err = s.writeRecords(line, 1); err != nil {
		select { // the writer's retry timer brings the sink back
		case s.failed <- struct{}{}:
		default:
		}
	}
	return err, true
}

var errSinkClosed = errors.New("audit: sink closed")

// recordLine is rec's bounded JSON line, in a pooled buffer.
func recordLine(rec AuditRecord) (*auditBuf, error) {
	rec.bound()
	ab := getAuditBuf(rec.lineSizeHint())
	line, err := rec.appendTo(ab.b)
	if err != nil {
		putAuditBuf(ab)
		return nil, err
	}
	ab.b = line
	return ab, nil
}

func (s *AuditSink) enqueue(rec AuditRecord, done chan error) error {
	line, err := recordLine(rec)
	if err != nil {
		return err
	}
	return s.enqueueLine(line, done)
}

func (s *AuditSink) enqueueLine(line *auditBuf, done chan error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		putAuditBuf(line)
		return errSinkClosed
	}
	s.pending.Add(1)
	select {
	case s.q <- auditItem{line: line, done: done}:
		return nil
	default:
		s.pending.Add(-1)
		putAuditBuf(line)
		s.drop()
		s.report(ErrAuditDropped)
		return ErrAuditDropped
	}
}

// Dropped reports how many records were lost: dropped because the queue was
// full, or not written because the write failed.
func (s *AuditSink) Dropped() int64 { return s.dropped.Load() }

func (s *AuditSink) drop() {
	s.dropped.Add(1)
	if s.opt.OnDrop != nil {
		s.opt.OnDrop()
	}
}

// Close writes what is queued, fsyncs and closes a file sink.
func (s *AuditSink) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.q)
	s.closeMu.Unlock()
	<-s.done
	if s.f != nil {
		err := s.f.Sync()
		return errors.Join(err, s.f.Close())
	}
	return nil
}

func (s *AuditSink) run() {
	defer close(s.done)
	var retry <-chan time.Time
	for {
		select {
		case it, ok := <-s.q:
			if !ok {
				return
			}
			if !s.writeBatch(it) {
				return
			}
		case <-retry:
			retry = nil
			s.wmu.Lock()
			s.writeGap()
			s.wmu.Unlock()
		case <-s.failed:
		}
		// Retry on a timer only while failing: a drained gateway (not
		// ready, so sent no calls) must still notice the disk came back.
		if !s.failing.Load() {
			retry = nil
		} else if retry == nil {
			retry = time.After(s.opt.retryEvery)
		}
	}
}

// Batching: the writer takes what is queued behind a record (up to these
// bounds) and writes it in one write(2), in queue order; every record of
// the batch then hears the one result. Calls waiting on their lines
// (fail-closed) so share a syscall instead of queueing for one each.
const (
	maxAuditBatch      = 128
	maxAuditBatchBytes = 256 << 10
)

// writeBatch writes first and the records queued behind it; false when
// the queue was closed meanwhile (the batch is written first).
func (s *AuditSink) writeBatch(first auditItem) (open bool) {
	open = true
	s.wmu.Lock()
	s.batch = append(s.batch[:0], first)
	size := len(first.line.b)
drain:
	for len(s.batch) < maxAuditBatch && size < maxAuditBatchBytes && !s.rotationDue(size) {
		select {
		case it, ok := <-s.q:
			if !ok {
				open = false
				break drain
			}
			s.batch = append(s.batch, it)
			size += len(it.line.b)
		default:
			break drain
		}
	}
	line := first.line.b
	if len(s.batch) > 1 {
		s.buf = s.buf[:0]
		for _, it := range s.batch {
			s.buf = append(s.buf, it.line.b...)
		}
		line = s.buf
	}
	err := s.writeRecords(line, len(s.batch))
	s.pending.Add(-int64(len(s.batch)))
	s.wmu.Unlock()
	for i, it := range s.batch {
		putAuditBuf(it.line) // written (or not): nothing reads it again
		if it.done != nil {
			it.done <- err
		}
		s.batch[i] = auditItem{}
	}
	if cap(s.buf) > maxAuditBatchBytes { // one huge record: do not keep its buffer
		s.buf = nil
	}
	return open
}

// rotationDue reports whether pending more bytes reach the rotation size:
// the batch ends there, so a file rotates after the line that crosses it,
// as without batching.
func (s *AuditSink) rotationDue(pending int) bool {
	return s.f != nil && s.opt.RotateBytes > 0 && s.size+int64(pending) >= s.opt.RotateBytes
}

// writeRecords writes n calls' lines, after the gap line when failing.
func (s *AuditSink) writeRecords(lines []byte, n int) error {
	if (s.failing.Load() && !s.writeGap()) || s.writeLine(lines) != nil {
		s.gapDropped += int64(n)
		for range n {
			s.drop()
		}
		return ErrAuditUnwritable
	}
	return nil
}

// writeGap writes the ReasonAuditGap line; true when the sink is healthy again.
func (s *AuditSink) writeGap() bool {
	line, _ := AuditRecord{Time: s.opt.now(), Decision: DecisionError, Reason: ReasonAuditGap, RecordsDropped: s.gapDropped}.line()
	if s.writeLine(line) != nil {
		return false
	}
	s.failing.Store(false)
	if s.opt.OnRecover != nil {
		s.opt.OnRecover(s.gapDropped)
	}
	s.gapDropped = 0
	return true
}

// writeLine writes one whole line or nothing: a partial write (a full disk)
// is truncated away so the file stays JSON lines.
func (s *AuditSink) writeLine(line []byte) error {
	n, err := s.w.Write(line)
	if err != nil {
		if n > 0 && s.f != nil && s.f.Truncate(s.size) == nil {
			n = 0
		}
		s.size += int64(n)
		if !s.failing.Swap(true) && s.opt.OnFail != nil {
			s.opt.OnFail()
		}
		s.report(fmt.Errorf("audit: write: %w", err))
		return err
	}
	s.size += int64(n)
	if s.f != nil && s.opt.RotateBytes > 0 && s.size >= s.opt.RotateBytes {
		s.rotate()
	}
	return nil
}

func (s *AuditSink) rotate() {
	if err := s.f.Sync(); err != nil {
		s.report(fmt.Errorf("audit: fsync before rotation: %w", err))
	}
	if err := s.f.Close(); err != nil {
		s.report(fmt.Errorf("audit: close before rotation: %w", err))
	}
	dst := s.path + "." + s.opt.now().UTC().Format(rotatedTimeLayout)
	if err := os.Rename(s.path, dst); err != nil {
		s.report(fmt.Errorf("audit: rotate: %w", err))
	} else {
		s.pruneRotated()
	}
	f, size, err := openAppend(s.path)
	if err != nil {
		s.report(err)
		s.w = failedWriter{err} // every later record fails (and is counted) until a restart
		s.f = nil
		return
	}
	s.w, s.f, s.size = f, f, size
}

// rotatedTimeLayout names a rotated file: the path, a dot, the UTC time
// of its rotation (sorts by time as text).
const rotatedTimeLayout = "20060102T150405.000000000Z"

// pruneRotated removes the rotated files KeepRotated and KeepRotatedFor
// do not keep. Only names the sink itself gives (the path, a dot and a
// rotation time) are considered; anything else in the directory is left.
func (s *AuditSink) pruneRotated() {
	if s.opt.KeepRotated <= 0 && s.opt.KeepRotatedFor <= 0 {
		return
	}
	dir, base := filepath.Split(s.path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		s.report(fmt.Errorf("audit: listing rotated files: %w", err))
		return
	}
	type rotated struct {
		name string
		at   time.Time
	}
	var files []rotated
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		at, err := time.Parse(rotatedTimeLayout, suffix)
		if err != nil {
			continue
		}
		files = append(files, rotated{e.Name(), at})
	}
	slices.SortFunc(files, func(a, b rotated) int { return b.at.Compare(a.at) }) // newest first
	cutoff := s.opt.now().Add(-s.opt.KeepRotatedFor)
	for i, f := range files {
		keep := (s.opt.KeepRotated <= 0 || i < s.opt.KeepRotated) && (s.opt.KeepRotatedFor <= 0 || !f.at.Before(cutoff))
		if keep {
			continue
		}
		if err := os.Remove(filepath.Join(dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.report(fmt.Errorf("audit: removing a rotated file: %w", err))
		}
	}
}

// failedWriter stands for a file that could not be reopened after rotation.
type failedWriter struct{ err error }

func (w failedWriter) Write([]byte) (int, error) { return 0, w.err }

// report tells OnError about err, at most once per errorEvery; the
// failures in between are counted and passed with the next report.
func (s *AuditSink) report(err error) {
	if s.opt.OnError == nil {
		return
	}
	s.errMu.Lock()
	now := s.opt.now()
	if !s.lastReport.IsZero() && now.Sub(s.lastReport) < s.opt.errorEvery {
		s.suppressed++
		s.errMu.Unlock()
		return
	}
	suppressed := s.suppressed
	s.lastReport, s.suppressed = now, 0
	s.errMu.Unlock()
	s.opt.OnError(err, suppressed)
}
