package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Candidate is the policy and tool set the calls are replayed against.
// Nil policy objects turn their check off, as in pipeline.Config.
type Candidate struct {
	// Tools is the candidate tool set (Tools, a registry.Snapshot; nil:
	// no tools).
	Tools              pipeline.Lookup
	Authz              *policy.Authorizer
	Rules              *policy.Rules
	Limits             policy.Limits
	ForwardEntityBound bool
	OptionalNulls      *policy.OptionalNulls
	// Callers resolves a recorded caller (CallersFromAuth); nil: no
	// caller is known, so no call is replayed.
	Callers CallerFunc
}

// Options bound a replay.
type Options struct {
	// MaxLineBytes bounds one audit line (default DefaultMaxLineBytes): a
	// longer one is skipped unread and counted as unreadable.
	MaxLineBytes int
	// MaxChanges bounds the changes the report lists (default
	// DefaultMaxChanges); the rest are counted (Report.ChangesOmitted).
	MaxChanges int
}

const (
	// DefaultMaxLineBytes holds a call's line with both argument forms
	// at the largest default argument size, escaped.
	DefaultMaxLineBytes = 64 << 20
	DefaultMaxChanges   = 1000
	// maxViolations bounds the violations one change lists, as the audit
	// line bounds them.
	maxViolations = 16
)

// Why a line is not replayed (Report.NotReplayable) or skipped
// (Report.Skipped). Stable: the JSON report carries them.
const (
	NotReplayableRedacted           = "arguments-redacted"
	NotReplayableNotRecorded        = "arguments-not-recorded"
	NotReplayableCallerUnknown      = "caller-unknown"
	NotReplayableUnauthenticated    = "unauthenticated"
	NotReplayableRateLimited        = "rate-limited"
	NotReplayableFailedBeforePolicy = "failed-before-policy"
	NotReplayableUnknownOutcome     = "unknown-outcome"
	NotReplayableUnreadable         = "unreadable-line"

	SkipNotToolCall = "not-a-tool-call"
	SkipAuditGap    = "audit-gap"
	SkipInputRound  = "later-input-round"
)

// Kinds of Change.
const (
	// ChangeAllowedToRefused: the call passed the policy and would now be
	// refused (not by the schema: ChangeSchemaRefused).
	ChangeAllowedToRefused = "allowed-to-refused"
	// ChangeSchemaRefused: the call passed and the candidate tool's schema
	// would now refuse its arguments.
	ChangeSchemaRefused = "schema-refused"
	// ChangeRefusedToAllowed: the call was refused and would now pass.
	ChangeRefusedToAllowed = "refused-to-allowed"
)

// Report is a replay's result.
type Report struct {
	// Lines read, and of them tool calls.
	Lines int64 `json:"lines"`
	Calls int64 `json:"calls"`
	// Replayed calls, and how they came out.
	Replayed         int64 `json:"replayed"`
	Unchanged        int64 `json:"unchanged"`
	AllowedToRefused int64 `json:"allowed_to_refused"` // schema refusals included
	SchemaRefused    int64 `json:"schema_refused"`
	RefusedToAllowed int64 `json:"refused_to_allowed"`
	// ReasonChanged: still refused, for another reason or by another rule
	// (counted in Unchanged).
	ReasonChanged int64 `json:"reason_changed"`
	// NotReplayable counts calls not replayed, by why (NotReplayable…);
	// Skipped lines that are not tool calls (Skip…).
	NotReplayable map[string]int64 `json:"not_replayable"`
	Skipped       map[string]int64 `json:"skipped"`
	// Changes are the changed decisions, in audit order (at most
	// Options.MaxChanges; ChangesOmitted more).
	Changes        []Change `json:"changes"`
	ChangesOmitted int64    `json:"changes_omitted"`
}

// Change is one call whose decision would change.
type Change struct {
	// Line is the call's line number in the audit (1-based).
	Line          int64     `json:"line"`
	Time          time.Time `json:"time"`
	Tool          string    `json:"tool"`
	CallID        string    `json:"call_id,omitempty"`
	CallerSubject string    `json:"caller_subject"`
	Kind          string    `json:"kind"`
	// Was is the recorded outcome; Now the candidate's.
	Was Outcome `json:"was"`
	Now Outcome `json:"now"`
}

// Outcome is a call's decision as its audit line gives it, and for a
// replayed refusal the rule, message and violations that explain it.
type Outcome struct {
	Decision   string   `json:"decision"`
	Reason     string   `json:"reason,omitempty"`
	Rule       string   `json:"rule,omitempty"`
	Message    string   `json:"message,omitempty"`
	Violations []string `json:"violations,omitempty"`
}

// Run replays every tool call of the audit r against cand. It reads r as
// a stream; the error is r's (or ctx's), never a line's: lines that cannot
// be read are counted (NotReplayableUnreadable).
func Run(ctx context.Context, r io.Reader, cand Candidate, o Options) (*Report, error) {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxChanges <= 0 {
		o.MaxChanges = DefaultMaxChanges
	}
	if cand.Tools == nil {
		cand.Tools = Tools{}
	}
	e := &engine{cand: cand, opt: o, rep: &Report{NotReplayable: map[string]int64{}, Skipped: map[string]int64{}, Changes: []Change{}}}
	e.pipe = pipeline.New(pipeline.Config{
		Registry: cand.Tools, RequireCaller: true,
		Authz: cand.Authz, Limits: cand.Limits, Rules: cand.Rules,
		ForwardEntityBound: cand.ForwardEntityBound, OptionalNulls: cand.OptionalNulls,
		// Rate limits and in-flight counts are state, not policy: not
		// replayed. No backend, no recorders: only the stages run.
	})
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var tooLong bool
		var err error
		line, tooLong, err = readLine(br, line[:0], o.MaxLineBytes)
		if len(line) > 0 || tooLong {
			e.rep.Lines++
			if tooLong {
				e.rep.Calls++
				e.rep.NotReplayable[NotReplayableUnreadable]++
			} else {
				e.line(ctx, line)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("replay: reading the audit: %w", err)
		}
	}
	return e.rep, nil
}

// readLine appends the next line (without its newline) to buf; a line
// over max is read past and reported tooLong, buf holding nothing.
func readLine(br *bufio.Reader, buf []byte, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+1 { // +1: the newline
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
		}
		return buf, tooLong, err
	}
}

type engine struct {
	cand Candidate
	opt  Options
	pipe *pipeline.Pipeline
	rep  *Report
}

// line replays one audit line (number rep.Lines).
func (e *engine) line(ctx context.Context, b []byte) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		e.rep.Calls++
		e.rep.NotReplayable[NotReplayableUnreadable]++
		return
	}
	cl, why := r.classify()
	switch cl {
	case classSkip:
		e.rep.Skipped[why]++
		return
	case classNotReplayable:
		e.rep.Calls++
		e.rep.NotReplayable[why]++
		return
	}
	e.rep.Calls++
	caller, ok := policy.Caller{}, false
	if e.cand.Callers != nil {
		caller, ok = e.cand.Callers(r.CallerSubject, r.CallerMethod)
	}
	if !ok {
		// A JWT caller's roles were its token's: the line's, if recorded.
		if roles, recorded := r.recordedRoles(); recorded {
			caller, ok = policy.Caller{Subject: r.CallerSubject, Method: r.CallerMethod, Roles: roles}, true
		}
	}
	if !ok {
		e.rep.NotReplayable[NotReplayableCallerUnknown]++
		return
	}
	was := Outcome{Decision: r.Decision, Reason: r.Reason, Rule: r.Rule}
	var now *pipeline.Error
	switch {
	case r.redacted():
		if now = e.access(caller, r.Tool); now == nil {
			e.rep.NotReplayable[NotReplayableRedacted]++
			return
		}
	case len(r.ArgsSent) == 0 && !r.reachedNormalize(cl):
		// Refused before normalization: the audit has no arguments. The
		// access checks need none.
		if now = e.access(caller, r.Tool); now == nil {
			e.rep.NotReplayable[NotReplayableNotRecorded]++
			return
		}
	default:
		now = e.stages(ctx, caller, &r)
	}
	e.rep.Replayed++
	passed := cl == classPassed
	switch {
	case passed && now == nil:
		e.rep.Unchanged++
	case !passed && now != nil:
		e.rep.Unchanged++
		if d, reason := now.AuditOutcome(); d != r.Decision || reason != r.Reason || now.Rule != r.Rule {
			e.rep.ReasonChanged++
		}
	case passed:
		e.rep.AllowedToRefused++
		kind := ChangeAllowedToRefused
		if now.Kind == pipeline.KindValidation {
			kind = ChangeSchemaRefused
			e.rep.SchemaRefused++
		}
		e.change(&r, kind, was, outcomeOf(now))
	default:
		e.rep.RefusedToAllowed++
		e.change(&r, ChangeRefusedToAllowed, was, Outcome{Decision: policy.DecisionAllow})
	}
}

func (e *engine) change(r *record, kind string, was, now Outcome) {
	if len(e.rep.Changes) >= e.opt.MaxChanges {
		e.rep.ChangesOmitted++
		return
	}
	e.rep.Changes = append(e.rep.Changes, Change{Line: e.rep.Lines, Time: r.Time, Tool: r.Tool, CallID: r.CallID,
		CallerSubject: r.CallerSubject, Kind: kind, Was: was, Now: now})
}

// stages runs the call through the candidate's stage list: its refusal,
// or nil when every stage passes.
func (e *engine) stages(ctx context.Context, caller policy.Caller, r *record) *pipeline.Error {
	c := pipeline.NewCall(r.Tool, "", nil)
	if len(r.ArgsSent) > 0 {
		// The text as the audit wrote it, parsed within the candidate's
		// argument limits as a face's JSON arguments are.
		c.ReceiveJSON("args_sent", string(r.ArgsSent), false)
	}
	ctx = policy.WithCaller(ctx, caller)
	e.pipe.Begin(c)
	for i := range e.pipe.Stages() {
		if err := e.pipe.RunStage(ctx, i, c); err != nil {
			return err
		}
	}
	return nil
}

// access is the candidate's role and allow-list decision, and whether it
// has the tool, for a call whose arguments are not known: a refusal there
// needs none. (Without the tool, a limit on the arguments may refuse the
// call before the lookup does: refused either way.)
func (e *engine) access(caller policy.Caller, tool string) *pipeline.Error {
	if az := e.cand.Authz; az != nil {
		if err := az.AllowMethod(caller, pipeline.InvokeMethod); err != nil {
			return pipeline.Classify(err)
		}
		if err := az.AllowTool(caller, tool); err != nil {
			return pipeline.Classify(err)
		}
	}
	if _, ok := e.cand.Tools.Lookup(tool); !ok {
		return pipeline.Classify(pipeline.ToolNotFound(tool))
	}
	return nil
}

// outcomeOf is a candidate refusal as a Change reports it.
func outcomeOf(err *pipeline.Error) Outcome {
	d, reason := err.AuditOutcome()
	o := Outcome{Decision: d, Reason: reason, Rule: err.Rule, Message: err.Message}
	for i, v := range err.Violations {
		if i == maxViolations {
			o.Violations = append(o.Violations, fmt.Sprintf("… and %d more", len(err.Violations)-i))
			break
		}
		o.Violations = append(o.Violations, v.Pointer+": "+v.Message)
	}
	return o
}
