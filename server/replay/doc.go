// Package replay is policy replay: it re-evaluates the tool calls an audit
// log recorded against a candidate policy and tool set, and reports each
// decision that would change (allowed → refused and back, with the rule
// and reason) and the calls a changed schema would now refuse.
//
// A recorded call is re-run through the pipeline's own stage list
// (server/pipeline), built from the candidate, with no backend: the
// decision is the one the gateway would make, not a re-implementation of
// it. Authentication is not replayed: the recorded caller (subject and
// authentication method) is taken as authenticated, with its roles from
// the candidate policy (Candidate.Callers: an API key's, a certificate
// subject's), or for a JWT caller, whose roles were its token's, from the
// line (caller_roles, written since issue 34; older lines: not replayable). What cannot be replayed is counted, with why:
// arguments that were redacted or never recorded (a call refused before
// normalization), a caller whose roles are not known, refusals that
// depend on state (rate limits) or on authentication.
//
// The audit is read as a stream, one line at a time (each bounded):
// memory does not grow with the file; the report keeps at most
// Options.MaxChanges changes and counts the rest.
//
//	rep, err := replay.Run(ctx, auditFile, replay.Candidate{Tools: snap, Authz: az, Rules: rules, Roles: replay.RolesFromAuth(cfg.Auth)}, replay.Options{})
//	rep.WriteText(os.Stdout) // or json.NewEncoder(os.Stdout).Encode(rep)
package replay
