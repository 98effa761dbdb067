package pipeline

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry/schema"
)

// notCallReasons are Reason… constants that are not a tool call's Error
// reason, so they have no row; each says why. A stale entry fails too.
var notCallReasons = map[string]string{
	"internal/policy.ReasonAuditGap":        "the audit sink's own line about lost records, never a call's error",
	"server/grpcapi.ReasonArgumentsInvalid": "the ErrorInfo spelling (ARGUMENTS_INVALID) of arguments-invalid, which has its row",
	"server/grpcapi.ReasonRevisionMismatch": "the registry service's optimistic-concurrency failure, not a tool call's",
}

var exportedReason = regexp.MustCompile(`^Reason[A-Z]`)

// reasonConstants finds, in every non-test Go file of the module, each
// string constant named Reason… or declared of type Reason: "dir.Name" →
// its value. It reads the source, not the table, so a reason added without
// a row is found.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	found := map[string]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "gen", "testdata", "node_modules", ".git":
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module (tools)
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				typed := false
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Reason" {
					typed = true
				}
				for i, name := range vs.Names {
					if i >= len(vs.Values) || !(typed || exportedReason.MatchString(name.Name)) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return err
					}
					found[filepath.ToSlash(rel)+"."+name.Name] = v
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestReasonsExhaustive: every reason constant in the module has exactly
// one row in the table, and every row is a declared constant — as
// connect-go's code_test.go holds its codes to their names.
func TestReasonsExhaustive(t *testing.T) {
	t.Parallel()
	consts := reasonConstants(t)
	declared := map[Reason]string{}
	for where, v := range consts {
		if why, ok := notCallReasons[where]; ok {
			if why == "" {
				t.Errorf("%s: excluded without a reason", where)
			}
			continue
		}
		if prev, ok := declared[Reason(v)]; ok {
			t.Errorf("reason %q is declared twice: %s and %s", v, prev, where)
		}
		declared[Reason(v)] = where
		if _, ok := reasons[Reason(v)]; !ok {
			t.Errorf("%s = %q has no row in reasons (server/pipeline/reason.go): add how each face and the audit log treat it", where, v)
		}
	}
	for where := range notCallReasons {
		if _, ok := consts[where]; !ok {
			t.Errorf("notCallReasons lists %s, which no longer exists", where)
		}
	}
	for r := range reasons {
		if _, ok := declared[r]; !ok {
			t.Errorf("row %q is not a declared Reason… constant", r)
		}
	}
	if len(declared) < 50 {
		t.Errorf("the scan found %d reasons; it is not reading the module", len(declared))
	}
}

// TestReasonRowsAreWellFormed: each row's values are ones the faces know.
func TestReasonRowsAreWellFormed(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	for r, s := range reasons {
		if !valid.MatchString(string(r)) {
			t.Errorf("%q: a reason is lower-case words joined by '-' (ErrorInfo turns it into UPPER_SNAKE)", r)
		}
		if s.Code == OK || (s.Code > Unauthenticated && s.Code != CodeOfError) {
			t.Errorf("%q: code %v is not a failure code", r, s.Code)
		}
		if s.MCP > MCPURLElicitation {
			t.Errorf("%q: MCP outcome %d is unknown", r, s.MCP)
		}
		if s.Decision != policy.DecisionDeny && s.Decision != policy.DecisionError {
			t.Errorf("%q: audit decision %q; want deny or error", r, s.Decision)
		}
		if s.Retry > RetryUnknown {
			t.Errorf("%q: retry hint %d is unknown", r, s.Retry)
		}
	}
}

// TestReasonRowsMatchTheirErrors: the errors the pipeline makes carry the
// code their reason's row says, so a face reading the row answers what the
// error means; and Finish audits by the row.
func TestReasonRowsMatchTheirErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  *Error
	}{
		{"tool not found", ToolNotFound("x")},
		{"tool name invalid", ToolNameInvalid("x y")},
		{"call id invalid", CallIDInvalid("a\nb")},
		{"audit refused up front", auditUnavailable("t")},
		{"audit withheld", auditWithheld("t")},
		{"validation", Classify(&schema.ValidationError{Tool: "t"})},
		{"canceled", Classify(context.Canceled)},
		{"deadline", Classify(context.DeadlineExceeded)},
		{"internal", Classify(errors.New("bug"))},
		{"unauthenticated", Classify(unauthenticated())},
		{"rate limited", Classify(&policy.Error{Code: policy.ResourceExhausted, Reason: policy.ReasonRateLimited})},
		{"rate store down", Classify(&policy.Error{Code: policy.Unavailable, Reason: policy.ReasonRateLimitUnavailable})},
		{"size limit", Classify(&policy.Error{Code: policy.InvalidArgument, Reason: policy.ReasonLimitDepth})},
		{"rule", Classify(&policy.Error{Code: policy.PermissionDenied, Reason: policy.ReasonRuleDenied})},
	} {
		s, ok := reasons[tc.err.Reason]
		if !ok {
			t.Errorf("%s: reason %q has no row", tc.name, tc.err.Reason)
			continue
		}
		if s.Code != tc.err.Code {
			t.Errorf("%s: error code %v, row %v", tc.name, tc.err.Code, s.Code)
		}
		deny := tc.err.Kind == KindPolicy || tc.err.Kind == KindValidation
		if deny != (s.Decision == policy.DecisionDeny) {
			t.Errorf("%s: kind %d, row decision %s", tc.name, tc.err.Kind, s.Decision)
		}
	}
}

// TestRetryWaitFollowsTheRow: only a reason a later retry may help passes
// its wait on.
func TestRetryWaitFollowsTheRow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason Reason
		want   bool
		why    string
	}{
		{policy.ReasonRateLimited, true, "a rate limit: waiting helps"},
		{ReasonIdempotencyInProgress, true, "the first call is still running"},
		{policy.ReasonRuleDenied, false, "a rule refuses the same arguments again, however long one waits"},
		{ReasonBackendError, false, "the backend's own error: the tool may have run"},
	} {
		e := &Error{Reason: tc.reason, RetryAfter: 1e9}
		if got := e.RetryWait() > 0; got != tc.want {
			t.Errorf("%s: RetryWait %v, want a wait %v (%s)", tc.reason, e.RetryWait(), tc.want, tc.why)
		}
	}
}
