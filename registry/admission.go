package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flowdrop/gateway/registry/lint"
)

// DefaultLintProfiles are the provider profiles a registration is linted
// against unless the deployment says which formats it exports to
// (--strict-lint=PROFILES): every format ExportTools renders a tool in as
// registered. openai-strict is left out: it is a mode a client opts into,
// and some ordinary schemas (a free-form object) have no strict form.
func DefaultLintProfiles() []lint.Profile {
	return []lint.Profile{lint.OpenAI, lint.Anthropic, lint.Gemini}
}

// Admission is the one path by which a tool definition is admitted to a
// store, whether registered (Registry.Register) or seeded (SeedWith): in
// order, it compiles the tool (refusing with *ToolError), lints its name
// and schema against provider profiles as each would export it
// (lint.LintExported: an error the export rewrite repairs is a warning;
// refusing error findings with *LintRefusedError under StrictLint,
// returning every finding otherwise),
// and compares it with the stored revision (refusing with
// *IncompatibleError under RequireCompatible, returning the notes
// otherwise). A schema that does not compile is the more basic problem, so
// it is reported before what a provider would think of it.
type Admission struct {
	// StrictLint refuses a schema with error-severity lint findings.
	StrictLint bool
	// LintProfiles are the profiles linted against; none: no lint.
	LintProfiles []lint.Profile
	// RequireCompatible refuses a definition with compatibility notes
	// against the stored revision.
	RequireCompatible bool
	// Compile is what the tool is compiled with.
	Compile CompileOptions
	// Check, when set, is the deployment's own refusal of a compiled tool
	// (the gateway's: credential references its policy does not declare).
	Check func(Tool) *ToolError
}

// Admitted is a tool that passed Admission.
type Admitted struct {
	// Entry is the compiled tool.
	Entry *Entry
	// Findings are the lint findings: warnings, and errors when not
	// StrictLint.
	Findings []lint.Finding
	// Current is the stored revision compared against; nil when there is
	// none (or no lookup was given).
	Current *Tool
	// Notes are the compatibility notes against Current.
	Notes []CompatNote
}

// Admit runs the admission of t. current reads the stored revision of a
// tool (ErrNotFound when there is none); it is called only once t has
// compiled and passed lint, and may be nil to compare with nothing. Any
// other error from it is returned as it is.
func (a Admission) Admit(ctx context.Context, t Tool, current func(ctx context.Context, name string) (Tool, error)) (Admitted, error) {
	return a.admit(ctx, t, current, a.Compile.Compile)
}

// admit is Admit with the compilation given (a Registry's, which tests
// replace to count compilations).
func (a Admission) admit(ctx context.Context, t Tool, current func(context.Context, string) (Tool, error), compile func(Tool) (*Entry, error)) (Admitted, error) {
	entry, err := compile(t)
	if err != nil {
		return Admitted{}, err
	}
	if a.Check != nil {
		if te := a.Check(t); te != nil {
			return Admitted{}, te
		}
	}
	if te := checkTLSFiles(t); te != nil {
		return Admitted{}, te
	}
	if err := checkOrigin(t, compile); err != nil {
		return Admitted{}, err
	}
	res := Admitted{Entry: entry}
	if len(a.LintProfiles) > 0 {
		res.Findings = lint.LintExported(t.Name, t.InputSchema, a.LintProfiles...)
		if a.StrictLint && lint.HasErrors(res.Findings) {
			var errs []lint.Finding
			for _, f := range res.Findings {
				if f.Severity == lint.SeverityError {
					errs = append(errs, f)
				}
			}
			return Admitted{}, &LintRefusedError{Tool: t.Name, Findings: errs}
		}
	}
	if current == nil {
		return res, nil
	}
	if a := t.AliasOf(); a != nil {
		target, err := current(ctx, a.Target)
		switch {
		case errors.Is(err, ErrNotFound):
			return Admitted{}, &ToolError{Tool: t.Name, Field: "spec.alias.target", Reason: fmt.Sprintf("no tool %q is registered", a.Target)}
		case err != nil:
			return Admitted{}, err
		}
		if te := CheckAlias(t, target); te != nil {
			return Admitted{}, te
		}
	}
	old, err := current(ctx, t.Name)
	switch {
	case err == nil:
		res.Current = &old
		res.Notes = CheckCompatibility(old, t)
	case !errors.Is(err, ErrNotFound):
		return Admitted{}, err
	}
	if a.RequireCompatible && len(res.Notes) > 0 {
		return Admitted{}, &IncompatibleError{Tool: t.Name, Notes: res.Notes}
	}
	return res, nil
}

// LintRefusedError refuses a tool whose schema has error-severity provider
// lint findings under strict lint. Findings holds the errors only.
type LintRefusedError struct {
	Tool     string
	Findings []lint.Finding
}

func (e *LintRefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %q: input schema fails provider lint (strict):", e.Tool)
	for i, f := range e.Findings {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteByte(' ')
		b.WriteString(f.String())
	}
	return b.String()
}
