package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Invocation is the try-it panel's Invoke: one call of a tool as the
// session's principal, made by the gateway (Config.Invoke).
type Invocation struct {
	Caller policy.Caller
	Tool   string
	// Arguments is the pasted text, parsed as a call's arguments_json is.
	Arguments string
	// IdempotencyKey is the form's ("" none).
	IdempotencyKey string
}

// Answer is an invoked call's outcome: the tool's answer as the gRPC face
// gives it, or the pipeline's refusal.
type Answer struct {
	// Result is the answer (InvokeToolResponse's result, is_error,
	// content and meta) as JSON, after the gateway's result guards
	// (max_result_bytes, the output schema).
	Result   []byte
	IsError  bool
	Replayed bool
	Repairs  []normalize.Repair
	// Err is the refusal (nil: the tool answered).
	Err *pipeline.Error
}

// DefaultInvokeTimeout bounds an Invoke when Config.InvokeTimeout is 0.
const DefaultInvokeTimeout = 30 * time.Second

// maxShownResult bounds the answer the page shows; the rest is counted.
const maxShownResult = 64 << 10

// invokeResult is the Invoke panel's answer on the page.
type invokeResult struct {
	Refusal, Code, Reason, Rule, Limit, RetryAfter string
	Violations                                     []violation
	Repairs                                        []repairRow
	Result                                         string
	Omitted                                        int
	IsError, Replayed                              bool
}

// mayInvoke: an admin session, or a viewer whose principal the policy in
// force lets call the tool. A viewer without that causes no call at all.
func (c *Console) mayInvoke(ctx context.Context, ses session, tool string) bool {
	if c.cfg.Invoke == nil {
		return false
	}
	return ses.admin || (c.cfg.MayInvoke != nil && c.cfg.MayInvoke(ctx, ses.caller(), tool))
}

// invoke calls the tool with the pasted arguments through the whole
// pipeline (roles, allow-lists, rate limits, rules, idempotency, audit) as
// the session's principal, within the invoke timeout, and shows the
// answer or the refusal.
func (c *Console) invoke(w http.ResponseWriter, r *http.Request, ses session) {
	name := r.PathValue("name")
	if c.cfg.Invoke == nil {
		c.fail(w, r, &ses, http.StatusNotFound, "this gateway does not invoke tools from the console")
		return
	}
	if _, ok := c.cfg.Registry.Lookup(name); !ok {
		c.fail(w, r, &ses, http.StatusNotFound, "no such tool")
		return
	}
	if !c.mayInvoke(r.Context(), ses, name) {
		c.fail(w, r, &ses, http.StatusForbidden, "Invoke calls the tool's backend: it needs the admin role, or a role the policy grants for InvokeTool on this tool; the session holds the viewer role (read-only)")
		return
	}
	if !ses.tokenExpiry.IsZero() && !c.now().Before(ses.tokenExpiry) {
		// A call as the principal needs its credential valid now, though
		// the session (reading pages) may outlive the token.
		c.fail(w, r, &ses, http.StatusUnauthorized, "the token this session logged in with has expired: log in again to invoke")
		return
	}
	text, key := r.PostFormValue("arguments"), r.PostFormValue("idempotency_key")
	timeout := c.cfg.InvokeTimeout
	if timeout <= 0 {
		timeout = DefaultInvokeTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	ans := c.cfg.Invoke(ctx, Invocation{Caller: ses.caller(), Tool: name, Arguments: text, IdempotencyKey: key})
	if r.Context().Err() != nil {
		return // the browser went away: nobody reads the page
	}
	c.cfg.Log.Info("console invoke", "subject", ses.subject, "tool", name, "refused", ans.Err != nil)
	res := &invokeResult{IsError: ans.IsError, Replayed: ans.Replayed}
	for _, rp := range ans.Repairs {
		res.Repairs = append(res.Repairs, repairRow{Path: cmpOr(rp.Path, "/"), Kind: rp.Kind.String()})
	}
	if e := ans.Err; e != nil {
		res.Refusal, res.Code, res.Reason, res.Rule, res.Limit = e.Message, e.Code.String(), string(e.Reason), e.Rule, e.Limit
		if e.RetryAfter > 0 {
			res.RetryAfter = e.RetryAfter.Round(time.Millisecond).String()
		}
		for _, v := range e.Violations {
			res.Violations = append(res.Violations, violation{Pointer: cmpOr(v.Pointer, "/"), Message: v.Message})
		}
	} else {
		res.Result, res.Omitted = shownJSON(ans.Result, maxShownResult)
	}
	c.toolPageWith(w, r, ses, text, key, nil, res)
}

// shownJSON is b indented, cut to at most limit bytes on a rune boundary,
// with the count of the bytes left out.
func shownJSON(b []byte, limit int) (string, int) {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		out.Reset()
		out.Write(b)
	}
	s := out.String()
	if len(s) <= limit {
		return s, 0
	}
	cut := strings.ToValidUTF8(s[:limit], "")
	return cut, len(s) - len(cut)
}
