package server

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/console"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/replay"
)

// serveConsole mounts the operator's console (server/console) on the
// admin listener, over the policy in force, the registry, the pipeline's
// stages and the audit log.
func (g *Gateway) serveConsole(cfg *Config) {
	c := console.New(console.Config{
		Registry: g.reg,
		// The snapshot in force: a reload's authenticator from the next
		// login on (and the sessions made before it end: PolicyHash).
		Authenticate: func(ctx context.Context, cr policy.Credentials) (policy.Caller, error) {
			return g.pipe.Policy().Auth.Authenticate(ctx, cr)
		},
		PolicyHash:    g.PolicySHA256,
		ReloadHistory: g.reload.History,
		Status:        g.status,
		ShadowDenials: func() []observe.Series { return g.metrics.Series("flowdrop_policy_shadow_denials_total") },
		Ejections:     g.tools.Ejections,
		Upstreams: func() []observe.UpstreamHealth {
			hs := g.follow.Health()
			out := make([]observe.UpstreamHealth, len(hs))
			for i, h := range hs {
				out[i] = observe.UpstreamHealth(h)
			}
			return out
		},
		Preview: g.pipe.Preview,
		Approve: func(ctx context.Context, caller policy.Caller, name string, rev int64) error {
			ctx = registry.WithWriter(ctx, caller.Subject) // the revision history names the approver
			return g.consoleWrite(ctx, caller, "ApprovePendingChange", name, func() (int64, error) {
				res, _, err := g.reg.ApprovePending(ctx, name, &rev, registry.RegisterOptions{StrictLint: cfg.StrictLint, LintProfiles: g.lintProfiles})
				return res.Tool.Revision, err
			})
		},
		Reject: func(ctx context.Context, caller policy.Caller, name string, rev int64) error {
			ctx = registry.WithWriter(ctx, caller.Subject) // the revision history names the approver
			return g.consoleWrite(ctx, caller, "RejectPendingChange", name, func() (int64, error) {
				t, err := g.reg.RejectPending(ctx, name, &rev)
				return t.Revision, err
			})
		},
		Invoke: g.consoleInvoke,
		MayInvoke: func(ctx context.Context, caller policy.Caller, tool string) bool {
			return g.pipe.Allowed(policy.WithCaller(ctx, caller), tool)
		},
		InvokeTimeout: min(console.DefaultInvokeTimeout, cfg.MaxCallTimeout),
		RepairStats:   g.repairs.Snapshot,
		Replay:        g.consoleReplay,
		AuditPath:     cfg.Policy.Audit.Path,
		Sessions:      g.consoleSessions(),
		Log:           g.log,
	})
	g.console = c
	g.admin.Handle("/console/", c.Handler())
	g.admin.Handle("/console", c.Handler())
}

// redisConsoleSessions is the console sessions' namespace in Redis: one
// hash tag, so each script's keys share a Cluster slot.
const redisConsoleSessions = "flowdrop:{console}:"

// consoleSessions is where the console keeps its sessions: Redis when
// configured, so a login holds on every replica and a logout or a policy
// change ends it on all (and while Redis does not answer the console
// refuses, 503); else this process's memory.
func (g *Gateway) consoleSessions() console.SessionStore {
	switch {
	case g.redis != nil:
		return g.redis.ConsoleSessions(redisConsoleSessions, redisstate.ConsoleSessionLimits{
			Max: console.MaxSessions, Idle: console.SessionIdle, Lifetime: console.SessionLifetime})
	default:
		return console.NewMemorySessions()
	}
}

// consoleInvoke is the console's Invoke: the pasted text becomes a call
// as the session's principal (no bearer token: a session keeps none) and
// runs the whole pipeline as a gRPC InvokeTool with arguments_json does —
// audit included, the line's client "console" — and the answer is the
// gRPC face's (result, is_error, content, meta) as JSON.
func (g *Gateway) consoleInvoke(ctx context.Context, in console.Invocation) console.Answer {
	c := pipeline.NewCall(in.Tool, "", nil)
	c.ReceiveJSON(pipeline.ArgumentsJSONField, in.Arguments, false)
	c.SetIdempotencyKey(in.IdempotencyKey)
	c.SetClient(policy.ClientConsole)
	c.AuditClient = policy.ClientConsole
	res, perr := g.pipe.Invoke(policy.WithCaller(ctx, in.Caller), c)
	ans := console.Answer{Repairs: c.Report.Repairs, Err: perr}
	if perr != nil {
		if c.Entry != nil && pipeline.IsBackendFailure(perr) {
			// The page names neither the target nor the cause; the log does.
			g.log.WarnContext(ctx, "console invoke: backend failed", "tool", c.Tool, "backend", c.Entry.Tool.Target(), "error", perr.Error())
		}
		return ans
	}
	resp := &gatewayv1.InvokeResponse{Result: res.Value, IsError: res.IsError}
	if res.Encoded != nil {
		resp = new(gatewayv1.InvokeResponse)
		if err := proto.Unmarshal(res.Encoded, resp); err != nil {
			g.log.ErrorContext(ctx, "console invoke: the backend's answer does not decode", "tool", c.Tool, "error", err.Error())
			ans.Err = &pipeline.Error{Code: pipeline.Internal, Reason: pipeline.ReasonInternal, Message: "the backend's answer does not decode (the gateway's log says why)"}
			return ans
		}
	}
	b, err := protojson.Marshal(resp)
	if err != nil {
		g.log.ErrorContext(ctx, "console invoke: the answer does not encode as JSON", "tool", c.Tool, "error", err.Error())
		ans.Err = &pipeline.Error{Code: pipeline.Internal, Reason: pipeline.ReasonInternal, Message: "the answer does not encode as JSON (the gateway's log says why)"}
		return ans
	}
	ans.Result, ans.IsError, ans.Replayed = b, resp.IsError, res.Replayed || c.Replayed()
	return ans
}

// consoleWrite makes a registry write for a console user and records its
// audit line as the gRPC registry's writes are (grpcapi's
// registryWriteAudit): refused up front while fail-closed audit cannot
// write; the line names the user, the write, its decision and revision.
func (g *Gateway) consoleWrite(ctx context.Context, caller policy.Caller, op, tool string, write func() (int64, error)) error {
	if e := g.auditor.BeginRegistryWrite(tool); e != nil {
		return e
	}
	w := pipeline.RegistryWrite{Start: time.Now(), Caller: caller, HasCaller: true, Operation: op, Tool: tool, Decision: policy.DecisionAllow}
	rev, err := write()
	if err != nil {
		w.Decision, w.Reason = policy.DecisionError, registryWriteReason(err)
	} else {
		w.Revision = rev
	}
	if e := g.auditor.RecordRegistryWrite(ctx, w); e != nil {
		return e
	}
	return err
}

// registryWriteReason is a refused console write's audit reason, as the
// gRPC registry's line gives the same refusal (its ErrorInfo reason, else
// its code's name in lower case).
func registryWriteReason(err error) string {
	var (
		rm *registry.RevisionMismatchError
		np *registry.NoPendingChangeError
		ie *registry.IncompatibleError
		te *registry.ToolError
		le *registry.LintRefusedError
	)
	switch {
	case errors.As(err, &rm):
		return "revision-mismatch"
	case errors.As(err, &np), errors.As(err, &ie):
		return "failed_precondition"
	case errors.As(err, &te), errors.As(err, &le):
		return "invalid_argument"
	case errors.Is(err, registry.ErrNotFound):
		return "not_found"
	case errors.Is(err, registry.ErrUnavailable), errors.Is(err, registry.ErrClosed):
		return "unavailable"
	}
	return "internal"
}

// consoleReplay is the console's policy replay: the candidate policy (and
// tools file, else the tools served now) built as check-config --replay
// builds them, run over the audit lines given. A candidate's refusal names
// at most a line number: parse errors may quote the pasted text.
func (g *Gateway) consoleReplay(ctx context.Context, pol, tools, audit []byte) (*replay.Report, error) {
	refused := func(what string, err error) error {
		msg := "the candidate " + what + " is not valid"
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			msg += " (at line " + m[1] + ")"
		}
		return &console.ReplayError{Message: msg + ": check it with flowdrop-gateway check-config, which says why"}
	}
	cfg, err := ParsePolicy(pol, "candidate")
	if err != nil {
		return nil, refused("policy", err)
	}
	cand, err := ReplayCandidate(&cfg)
	if err != nil {
		return nil, refused("policy", err)
	}
	bound := schemaBound(cfg.Limits.MaxSchemaEvaluations)
	var defs []registry.Tool
	if len(bytes.TrimSpace(tools)) == 0 {
		for _, e := range g.reg.Snapshot().List() {
			defs = append(defs, e.Tool)
		}
	} else if defs, err = registry.ParseToolsWith(tools, "candidate", bound); err != nil {
		return nil, refused("tools file", err)
	}
	if cand.Tools, err = replay.CompileTools(defs, bound); err != nil {
		if len(bytes.TrimSpace(tools)) == 0 {
			g.log.Error("console: the tools served now do not compile for a replay", "error", err.Error())
			return nil, &console.ReplayError{Message: "the tools served now could not be compiled for the replay (the gateway's log says why): paste a tools file"}
		}
		return nil, refused("tools file", err)
	}
	return replay.Run(ctx, bytes.NewReader(audit), cand, replay.Options{})
}

var yamlLine = regexp.MustCompile(`line (\d+)`)
