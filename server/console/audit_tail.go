package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"time"
)

// The audit tail reads at most the last MaxAuditTailBytes of the audit
// file (not its rotated predecessors) and shows at most maxAuditRows of
// the matching lines, newest first: a page view costs bounded I/O and
// memory whatever the log's size.
const (
	MaxAuditTailBytes = 4 << 20
	maxAuditRows      = 500
)

// auditLine is what the console shows of an audit line: never its
// arguments (as sent or repaired) nor its violations' texts, which may
// quote argument values; only who, what, the decision and the repairs'
// places and kinds.
type auditLine struct {
	Time          time.Time `json:"time"`
	CallerSubject string    `json:"caller_subject"`
	Tool          string    `json:"tool"`
	Decision      string    `json:"decision"`
	Reason        string    `json:"reason"`
	Repairs       []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"repairs"`
	Validation    string   `json:"validation"`
	Violations    []string `json:"violations"`
	Operation     string   `json:"operation"`
	Revision      int64    `json:"revision"`
	LatencyMS     float64  `json:"latency_ms"`
	ShadowDenials []struct {
		Reason string `json:"reason"`
	} `json:"shadow_denials"`
}

// auditFilter selects lines: each set field must equal the line's.
type auditFilter struct {
	Tool, Caller, Decision, Reason string
	// writesOnly keeps the registry writes (the lines naming an operation
	// that made or refused a revision).
	writesOnly bool
}

func (f auditFilter) match(l *auditLine) bool {
	return (f.Tool == "" || l.Tool == f.Tool) && (f.Caller == "" || l.CallerSubject == f.Caller) &&
		(f.Decision == "" || l.Decision == f.Decision) && (f.Reason == "" || l.Reason == f.Reason) &&
		(!f.writesOnly || isRegistryWrite(l.Operation))
}

func isRegistryWrite(op string) bool {
	switch op {
	case "RegisterTool", "DeleteTool", "ApprovePendingChange", "RejectPendingChange":
		return true
	}
	return false
}

type auditData struct {
	Filter    auditFilter
	Lines     []auditLine
	Scanned   int
	Truncated bool
	Note      string
}

// auditTail is what readAudit found.
type auditTail struct {
	Lines     []auditLine // newest first
	Scanned   int
	Truncated bool
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request, ses session) {
	q := r.URL.Query()
	f := auditFilter{Tool: bounded(q.Get("tool")), Caller: bounded(q.Get("caller")), Decision: bounded(q.Get("decision")), Reason: bounded(q.Get("reason"))}
	tail, note := c.readAudit(f)
	d := auditData{Filter: f, Lines: tail.Lines, Scanned: tail.Scanned, Truncated: tail.Truncated, Note: note}
	c.render(w, http.StatusOK, pages.audit, ses.view("Audit log", "audit", d))
}

func bounded(s string) string {
	if len(s) > maxQuery {
		return s[:maxQuery]
	}
	return s
}

// readAudit reads the audit file's tail and keeps the lines f selects;
// note says, when there is nothing to read, why (never the file's path).
func (c *Console) readAudit(f auditFilter) (auditTail, string) {
	if c.cfg.AuditPath == "" || c.cfg.AuditPath == "-" {
		return auditTail{}, "The audit log is not written to a file (policy audit.path), so there is no tail to read."
	}
	file, err := os.Open(c.cfg.AuditPath)
	if errors.Is(err, fs.ErrNotExist) {
		return auditTail{}, "The audit log has no line yet."
	}
	if err != nil {
		c.cfg.Log.Error("console: the audit log cannot be read", "error", err.Error())
		return auditTail{}, "The audit log cannot be read (the gateway's log says why)."
	}
	defer file.Close()
	tail, err := tailOf(file, MaxAuditTailBytes, f)
	if err != nil {
		c.cfg.Log.Error("console: the audit log cannot be read", "error", err.Error())
		return auditTail{}, "The audit log cannot be read (the gateway's log says why)."
	}
	return tail, ""
}

// tailOf reads the last window bytes of f, drops a first line cut by the
// window, and keeps the lines sel selects, newest first (at most
// maxAuditRows). A line that is not an audit record is skipped.
func tailOf(f *os.File, window int64, sel auditFilter) (auditTail, error) {
	buf, err := tailBytes(f, window)
	if err != nil {
		return auditTail{}, err
	}
	var t auditTail
	sc := bufio.NewScanner(bytes.NewReader(buf))
	sc.Buffer(nil, len(buf)+1)
	for sc.Scan() {
		var l auditLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		t.Scanned++
		if sel.match(&l) {
			t.Lines = append(t.Lines, l)
		}
	}
	slices.Reverse(t.Lines)
	if len(t.Lines) > maxAuditRows {
		t.Lines, t.Truncated = t.Lines[:maxAuditRows], true
	}
	return t, nil
}

// tailBytes is the last window bytes of f from its first whole line.
func tailBytes(f *os.File, window int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start := max(0, st.Size()-window)
	buf := make([]byte, st.Size()-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	if start > 0 { // the window began inside a line
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		} else {
			buf = nil
		}
	}
	return buf, nil
}
