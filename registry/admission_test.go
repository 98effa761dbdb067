package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/registry/memstore"
)

// noItems is an array parameter without "items": an error for OpenAI, a
// warning for Anthropic.
const noItems = `{"tags":{"type":"array"}}`

func TestAdmission(t *testing.T) {
	ctx := context.Background()
	stored := mkTool(t, "t", `{"q":{"type":"string"},"n":{"type":"integer"}}`)
	stored.Revision = 7
	lookup := func(_ context.Context, name string) (registry.Tool, error) {
		if name == stored.Name {
			return stored, nil
		}
		return registry.Tool{}, registry.ErrNotFound
	}
	broken := errors.New("store unreachable")
	failing := func(context.Context, string) (registry.Tool, error) { return registry.Tool{}, broken }
	openai, anthropic := []lint.Profile{lint.OpenAI}, []lint.Profile{lint.Anthropic}
	cases := []struct {
		reason    string
		adm       registry.Admission
		tool      registry.Tool
		current   func(context.Context, string) (registry.Tool, error)
		wantErr   any // nil or a pointer to the error type expected
		errIs     error
		severity  lint.Severity // of every finding returned; "" for none
		wantNotes bool
	}{
		{reason: "strict lint refuses error findings", adm: registry.Admission{StrictLint: true, LintProfiles: openai},
			tool: mkTool(t, "new", noItems), wantErr: new(*registry.LintRefusedError)},
		{reason: "without strict lint, error findings come back as findings", adm: registry.Admission{LintProfiles: openai},
			tool: mkTool(t, "new", noItems), severity: lint.SeverityError},
		{reason: "strict lint admits a schema with warnings only, returning them", adm: registry.Admission{StrictLint: true, LintProfiles: anthropic},
			tool: mkTool(t, "new", noItems), severity: lint.SeverityWarning},
		{reason: "no profiles, no lint", adm: registry.Admission{StrictLint: true},
			tool: mkTool(t, "new", noItems)},
		{reason: "a schema that does not compile is reported before lint", adm: registry.Admission{StrictLint: true, LintProfiles: openai},
			tool: mkTool(t, "new", `{"tags":{"type":"array"},"bad":{"type":"strin"}}`), wantErr: new(*registry.ToolError)},
		{reason: "an incompatible update is refused when compatibility is required", adm: registry.Admission{RequireCompatible: true},
			tool: mkTool(t, "t", `{"q":{"type":"string"}}`), current: lookup, wantErr: new(*registry.IncompatibleError)},
		{reason: "an incompatible update comes back with notes when not required", adm: registry.Admission{},
			tool: mkTool(t, "t", `{"q":{"type":"string"}}`), current: lookup, wantNotes: true},
		{reason: "a compatible update is admitted when compatibility is required", adm: registry.Admission{RequireCompatible: true},
			tool: mkTool(t, "t", `{"q":{"type":"string"},"n":{"type":"number"},"extra":{}}`), current: lookup},
		{reason: "a new tool has nothing to be incompatible with", adm: registry.Admission{RequireCompatible: true},
			tool: mkTool(t, "other", `{}`), current: lookup},
		{reason: "a store failure reading the current revision is returned as it is", adm: registry.Admission{},
			tool: mkTool(t, "t", `{}`), current: failing, errIs: broken},
	}
	for _, c := range cases {
		got, err := c.adm.Admit(ctx, c.tool, c.current)
		switch {
		case c.errIs != nil:
			if !errors.Is(err, c.errIs) {
				t.Errorf("%s: error %v, want %v", c.reason, err, c.errIs)
			}
			continue
		case c.wantErr != nil:
			target := c.wantErr
			if !errors.As(err, target) {
				t.Errorf("%s: error %T %v, want %T", c.reason, err, err, c.wantErr)
			}
			continue
		case err != nil:
			t.Errorf("%s: refused: %v", c.reason, err)
			continue
		}
		if got.Entry == nil || got.Entry.Tool.Name != c.tool.Name {
			t.Errorf("%s: admitted without the compiled entry: %+v", c.reason, got.Entry)
		}
		for _, f := range got.Findings {
			if f.Severity != c.severity {
				t.Errorf("%s: finding %v, want severity %q only", c.reason, f, c.severity)
			}
		}
		if (len(got.Findings) > 0) != (c.severity != "") {
			t.Errorf("%s: findings %v, want some of severity %q: %v", c.reason, got.Findings, c.severity, c.severity != "")
		}
		if (len(got.Notes) > 0) != c.wantNotes {
			t.Errorf("%s: notes %v, want notes: %v", c.reason, got.Notes, c.wantNotes)
		}
		if c.current != nil && c.tool.Name == stored.Name && (got.Current == nil || got.Current.Revision != stored.Revision) {
			t.Errorf("%s: Current = %+v, want the stored revision %d", c.reason, got.Current, stored.Revision)
		}
	}
}

func TestLintRefusedErrorMessage(t *testing.T) {
	_, err := registry.Admission{StrictLint: true, LintProfiles: []lint.Profile{lint.OpenAI, lint.Anthropic}}.Admit(context.Background(), mkTool(t, "t", noItems), nil)
	var le *registry.LintRefusedError
	if !errors.As(err, &le) {
		t.Fatalf("error %T %v, want *LintRefusedError", err, err)
	}
	// The errors only: Anthropic's finding is a warning.
	if len(le.Findings) != 1 || le.Findings[0].Profile != lint.OpenAI || le.Tool != "t" {
		t.Fatalf("findings %v of tool %q, want the one OpenAI error of t", le.Findings, le.Tool)
	}
	if want := `tool "t": input schema fails provider lint (strict): ` + le.Findings[0].String(); err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

// TestSeedWithAdmission: seeding goes through admission, so strict lint
// refuses a seeded tool as it refuses a registered one, before anything is
// written; Seed itself only compiles.
func TestSeedWithAdmission(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	tools := []registry.Tool{mkTool(t, "fine", `{"q":{"type":"string"}}`), mkTool(t, "lint_fails", noItems)}
	strict := registry.Admission{StrictLint: true, LintProfiles: registry.DefaultLintProfiles()}
	err := registry.SeedWith(ctx, s, tools, strict)
	var le *registry.LintRefusedError
	if !errors.As(err, &le) || le.Tool != "lint_fails" || !strings.Contains(err.Error(), `tool "lint_fails"`) {
		t.Fatalf("strict seed: %v, want *LintRefusedError naming lint_fails", err)
	}
	if _, err := s.Get(ctx, "lint_fails"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a refused tool was written: %v", err)
	}
	if err := registry.SeedWith(ctx, s, tools, registry.Admission{LintProfiles: registry.DefaultLintProfiles()}); err != nil {
		t.Fatalf("seed without strict lint: %v", err)
	}
	rev := s.Revision()
	if err := registry.Seed(ctx, s, tools); err != nil || s.Revision() != rev {
		t.Fatalf("re-seed: %v, store revision %d -> %d (want unchanged)", err, rev, s.Revision())
	}
	changed := []registry.Tool{mkTool(t, "fine", `{}`)}
	if err := registry.SeedWith(ctx, s, changed, registry.Admission{RequireCompatible: true}); !errors.As(err, new(*registry.IncompatibleError)) {
		t.Errorf("seeding a tool that drops a parameter under RequireCompatible: %v, want *IncompatibleError", err)
	}
}

// TestRegisterAdmission: Register admits through the same path, with the
// lint settings of its options.
func TestRegisterAdmission(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	r := start(t, s)
	_, err := r.Register(ctx, mkTool(t, "t", noItems), registry.RegisterOptions{StrictLint: true, LintProfiles: registry.DefaultLintProfiles()})
	if !errors.As(err, new(*registry.LintRefusedError)) {
		t.Fatalf("strict Register: %v, want *LintRefusedError", err)
	}
	if _, ok := r.Lookup("t"); ok {
		t.Fatal("a refused tool was published")
	}
	res, err := r.Register(ctx, mkTool(t, "t", noItems), registry.RegisterOptions{LintProfiles: registry.DefaultLintProfiles()})
	if err != nil || len(res.Findings) == 0 || !res.Created {
		t.Fatalf("Register: %+v, %v; want created with findings", res, err)
	}
	res, err = r.Register(ctx, mkTool(t, "t", noItems), registry.RegisterOptions{})
	if err != nil || len(res.Findings) != 0 {
		t.Fatalf("Register without profiles: %+v, %v; want no findings", res, err)
	}
}
