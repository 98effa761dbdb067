package replay

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// record is what replay reads of an audit line (policy.AuditRecord as
// written): the call, its caller, how it ended, its arguments as sent.
type record struct {
	Time          time.Time       `json:"time"`
	CallerSubject string          `json:"caller_subject"`
	CallerMethod  string          `json:"caller_method"`
	CallerRoles   []string        `json:"caller_roles"`
	Tool          string          `json:"tool"`
	CallID        string          `json:"call_id"`
	Decision      string          `json:"decision"`
	Reason        string          `json:"reason"`
	Rule          string          `json:"rule"`
	Validation    string          `json:"validation"`
	BackendCode   string          `json:"backend_code"`
	ArgsSent      json.RawMessage `json:"args_sent"`
	Operation     string          `json:"operation"`
	InputRound    int             `json:"input_round"`
}

// class is how a recorded line enters the replay.
type class uint8

const (
	// classSkip: not a tool call (a registry write, a federated MCP
	// request, an audit-gap line) or a later round of one already counted.
	classSkip class = iota
	// classPassed: the call passed every policy stage (allowed, or it
	// failed later: at its backend, at dispatch).
	classPassed
	// classRefused: a stage refused it (the role, the allow lists, a
	// limit, the schema, a rule, no such tool).
	classRefused
	// classNotReplayable: its outcome depends on what replay does not
	// judge (authentication, rate-limit state) or is not known.
	classNotReplayable
)

// stageRefusals are the deny reasons the stages give (the rest of the
// deny reasons are given at dispatch, after every stage passed, or are
// authentication's and rate limits').
var stageRefusals = map[string]bool{
	policy.ReasonRoleMissing: true, policy.ReasonMethodUnknown: true,
	policy.ReasonToolNotAllowed: true, policy.ReasonToolDenied: true,
	policy.ReasonRuleDenied: true, policy.ReasonRuleError: true,
	policy.ReasonLimitArgumentSize: true, policy.ReasonLimitStringLength: true, policy.ReasonLimitDepth: true,
	policy.ReasonLimitListElements: true, policy.ReasonLimitObjectKeys: true, policy.ReasonLimitValidationSteps: true,
	policy.ReasonValueWithoutKind: true, string(pipeline.ReasonEntityBound): true, pipeline.AuditValidationFailed: true,
}

// afterStages are the deny reasons given after every stage passed.
var afterStages = map[string]bool{
	policy.ReasonLimitInFlight: true, string(pipeline.ReasonInputForbidden): true,
	string(pipeline.ReasonIdentityAudience): true, string(pipeline.ReasonIdentityRefused): true,
}

// classify says how a line enters the replay; for classSkip and
// classNotReplayable, why (a Report key).
func (r *record) classify() (class, string) {
	if r.Reason == policy.ReasonAuditGap {
		return classSkip, SkipAuditGap
	}
	if spec, ok := pipeline.SpecOf(pipeline.Reason(r.Reason)); ok && r.Decision == policy.DecisionDeny && spec.Code == pipeline.Unauthenticated {
		if r.Operation == "" || r.Operation == "InvokeTool" || r.Operation == "tools/call" {
			return classNotReplayable, NotReplayableUnauthenticated
		}
		return classSkip, SkipNotToolCall
	}
	if r.Operation != "" {
		return classSkip, SkipNotToolCall
	}
	if r.InputRound > 1 {
		return classSkip, SkipInputRound
	}
	switch r.Decision {
	case policy.DecisionAllow:
		return classPassed, ""
	case policy.DecisionDeny:
		switch {
		case stageRefusals[r.Reason]:
			return classRefused, ""
		case afterStages[r.Reason]:
			return classPassed, ""
		case r.Reason == policy.ReasonRateLimited || r.Reason == policy.ReasonRateLimitUnavailable:
			return classNotReplayable, NotReplayableRateLimited
		}
	case policy.DecisionError:
		// An error line names the gRPC code, not the reason: the backend
		// was called, or validation passed (rules refuse as denials), so
		// the stages passed; else NotFound without a backend is the
		// normalize stage's unknown tool.
		switch {
		case r.BackendCode != "" || r.Validation == "ok":
			return classPassed, ""
		case r.Reason == "NotFound":
			return classRefused, ""
		}
		return classNotReplayable, NotReplayableFailedBeforePolicy
	}
	return classNotReplayable, NotReplayableUnknownOutcome
}

// reachedNormalize reports whether the call got as far as the normalize
// stage, which is when the audit records its arguments: a line of such a
// call without args_sent had none.
func (r *record) reachedNormalize(cl class) bool {
	if cl == classPassed || r.Validation != "" {
		return true
	}
	switch r.Reason {
	case string(pipeline.ReasonEntityBound), policy.ReasonRuleDenied, policy.ReasonRuleError, pipeline.AuditValidationFailed:
		return true
	}
	return false
}

// recordedRoles are the roles the line recorded for a JWT caller (whose
// roles were its token's), when it recorded them whole.
func (r *record) recordedRoles() ([]string, bool) {
	if r.CallerMethod != policy.MethodJWT || r.CallerRoles == nil {
		return nil, false
	}
	if n := len(r.CallerRoles); n > 0 && strings.HasPrefix(r.CallerRoles[n-1], "… and ") {
		return nil, false // bounded: not all of them
	}
	return r.CallerRoles, true
}

var redactedJSON = []byte(`"` + policy.Redacted + `"`)

// redacted reports whether the arguments hold a value the audit redacted.
// A model that sent the marker itself is counted alike: its call cannot
// be told from a redacted one.
func (r *record) redacted() bool { return bytes.Contains(r.ArgsSent, redactedJSON) }
