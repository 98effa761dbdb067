package console

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"slices"

	"github.com/flowdrop/gateway/server/replay"
)

// maxReplayInput bounds each pasted file (the policy, the tools); the
// whole form is bounded by maxFormBytes too, so both fit together.
const maxReplayInput = 512 << 10

// ReplayError is a candidate's refusal as the console may show it: its
// text is the gateway's, never the pasted file's (a YAML error may quote
// the text it could not read).
type ReplayError struct{ Message string }

func (e *ReplayError) Error() string { return e.Message }

type replayData struct {
	Ran      bool
	TailNote string
	Report   *replay.Report
	Changes  []replay.Change
	NotRepl  []countRow
	Skipped  []countRow
}

type countRow struct {
	Why   string
	Count int64
}

func (c *Console) replayForm(w http.ResponseWriter, _ *http.Request, ses session) {
	c.render(w, http.StatusOK, pages.replay, ses.view("Policy replay", "replay", replayData{}))
}

// replayRun replays the audit file's tail (the audit page's window)
// against the pasted candidate. The page never shows the pasted text, nor
// a change's message or violations (they may quote argument values).
func (c *Console) replayRun(w http.ResponseWriter, r *http.Request, ses session) {
	if c.cfg.Replay == nil {
		c.fail(w, r, &ses, http.StatusNotFound, "this gateway does not replay")
		return
	}
	pol, tools := r.PostFormValue("policy"), r.PostFormValue("tools")
	if len(pol) > maxReplayInput || len(tools) > maxReplayInput {
		c.fail(w, r, &ses, http.StatusRequestEntityTooLarge, "a pasted file is over 512 KiB")
		return
	}
	if pol == "" {
		c.fail(w, r, &ses, http.StatusBadRequest, "paste a candidate policy file")
		return
	}
	d := replayData{Ran: true}
	var tail []byte
	if c.cfg.AuditPath == "" || c.cfg.AuditPath == "-" {
		c.fail(w, r, &ses, http.StatusConflict, "the audit log is not written to a file (policy audit.path): nothing to replay")
		return
	}
	f, err := os.Open(c.cfg.AuditPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		c.cfg.Log.Error("console: the audit log cannot be read", "error", err.Error())
		c.fail(w, r, &ses, http.StatusInternalServerError, "the audit log cannot be read (the gateway's log says why)")
		return
	default:
		tail, err = tailBytes(f, MaxAuditTailBytes)
		f.Close()
		if err != nil {
			c.cfg.Log.Error("console: the audit log cannot be read", "error", err.Error())
			c.fail(w, r, &ses, http.StatusInternalServerError, "the audit log cannot be read (the gateway's log says why)")
			return
		}
	}
	rep, err := c.cfg.Replay(r.Context(), []byte(pol), []byte(tools), tail)
	var re *ReplayError
	switch {
	case errors.As(err, &re):
		c.fail(w, r, &ses, http.StatusUnprocessableEntity, re.Message)
		return
	case errors.Is(err, context.Canceled):
		return
	case err != nil:
		c.cfg.Log.Error("console: replay failed", "error", err.Error())
		c.fail(w, r, &ses, http.StatusInternalServerError, "the replay failed (the gateway's log says why)")
		return
	}
	d.Report, d.Changes = rep, rep.Changes
	if len(d.Changes) > maxAuditRows {
		d.Changes = d.Changes[:maxAuditRows]
	}
	d.NotRepl, d.Skipped = counts(rep.NotReplayable), counts(rep.Skipped)
	c.render(w, http.StatusOK, pages.replay, ses.view("Policy replay", "replay", d))
}

func counts(m map[string]int64) []countRow {
	var out []countRow
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, countRow{k, m[k]})
	}
	return out
}
