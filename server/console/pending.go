package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

type pendingData struct {
	Changes []pendingChange
}

// pendingChange is one tool's held upstream change with its diff.
type pendingChange struct {
	Name                           string
	Revision                       int64
	Kinds                          []string
	Notes                          []registry.CompatNote
	DetectedAt                     time.Time
	HeldBecause                    string
	Removed                        bool
	OldDescription, NewDescription string
	OldSchema, NewSchema           string
}

// maxPendingShown bounds the changes one page lists.
const maxPendingShown = 100

func (c *Console) pending(w http.ResponseWriter, r *http.Request, ses session) {
	var d pendingData
	for _, e := range c.cfg.Registry.Snapshot().List() {
		t := e.Tool
		if t.Pending == nil {
			continue
		}
		if len(d.Changes) == maxPendingShown {
			break
		}
		p := *t.Pending
		kinds, notes := registry.ChangeKinds(t, p)
		pc := pendingChange{Name: t.Name, Revision: t.Revision, Kinds: kinds, Notes: notes, DetectedAt: p.DetectedAt,
			HeldBecause: "held by the policy (mcp_upstreams.auto_approve does not name every kind)", Removed: p.Removed, OldDescription: t.Description, OldSchema: prettyStruct(t.InputSchema)}
		if t.Edited() {
			pc.HeldBecause = "held: an admin edited the tool, so no change replaces it unreviewed"
		}
		if !p.Removed {
			pc.NewDescription, pc.NewSchema = p.Definition.Description, prettyStruct(p.Definition.InputSchema)
		}
		d.Changes = append(d.Changes, pc)
	}
	v := ses.view("Pending upstream changes", "pending", d)
	// The redirect after a decision names the tool; anything that is not
	// a tool name is not echoed (no text of a link's choosing on the page).
	q := r.URL.Query()
	for _, done := range []string{"approved", "rejected"} {
		if name := q.Get(done); name != "" && registry.ValidateName(name) == nil {
			v.Notice = done + " the change of " + name
		}
	}
	c.render(w, http.StatusOK, pages.pending, v)
}

// decide approves or rejects a tool's pending change at the revision the
// admin reviewed (the form's): a change that moved since is refused, not
// applied unseen.
func (c *Console) decide(approve bool) handler {
	return func(w http.ResponseWriter, r *http.Request, ses session) {
		name := r.PathValue("name")
		rev, err := strconv.ParseInt(r.PostFormValue("revision"), 10, 64)
		if err != nil || rev < 0 {
			c.fail(w, r, &ses, http.StatusBadRequest, "the form's revision is missing or not a revision")
			return
		}
		do, done := c.cfg.Reject, "rejected"
		if approve {
			do, done = c.cfg.Approve, "approved"
		}
		caller := ses.caller()
		if err := do(r.Context(), caller, name, rev); err != nil {
			status, msg := c.decisionError(err)
			c.fail(w, r, &ses, status, "not "+done+": "+msg)
			return
		}
		http.Redirect(w, r, "/console/pending?"+url.Values{done: {name}}.Encode(), http.StatusSeeOther)
	}
}

// decisionError is how an approval's or rejection's failure is shown: the
// registry's refusals as they are (they name the tool and revisions);
// anything else — a store error may name the store's address — only in
// the log.
func (c *Console) decisionError(err error) (int, string) {
	var (
		mismatch *registry.RevisionMismatchError
		none     *registry.NoPendingChangeError
		te       *registry.ToolError
		ie       *registry.IncompatibleError
		le       *registry.LintRefusedError
		pe       *pipeline.Error
	)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return http.StatusNotFound, "no such tool"
	case errors.As(err, &mismatch), errors.As(err, &none):
		return http.StatusConflict, err.Error() + " (reload the page to review the change as it is now)"
	case errors.As(err, &te), errors.As(err, &ie), errors.As(err, &le):
		return http.StatusUnprocessableEntity, err.Error()
	case errors.As(err, &pe):
		return http.StatusServiceUnavailable, pe.Message
	}
	c.cfg.Log.Error("console: a pending change could not be decided", "error", err.Error())
	return http.StatusInternalServerError, "the registry could not apply it (the gateway's log says why)"
}
