package policy

import (
	"slices"

	celast "github.com/google/cel-go/common/ast"
)

// argFields is what a rule reads of args: the member names it selects
// (args.title, has(args.title)), or all when it uses args any other way
// (size(args), args[k], "k" in args, a macro over args, a comprehension
// variable named args) — then the whole arguments must be decoded.
type argFields struct {
	names []string
	all   bool
}

func argFieldsOf(a *celast.AST) argFields {
	var idents, selects int
	var out argFields
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.IdentKind:
			if e.AsIdent() == "args" {
				idents++
			}
		case celast.SelectKind:
			if s := e.AsSelect(); s.Operand().Kind() == celast.IdentKind && s.Operand().AsIdent() == "args" {
				selects++
				if !slices.Contains(out.names, s.FieldName()) {
					out.names = append(out.names, s.FieldName())
				}
			}
		case celast.ComprehensionKind:
			if c := e.AsComprehension(); c.IterVar() == "args" || c.IterVar2() == "args" || c.AccuVar() == "args" {
				out.all = true
			}
		}
	}))
	if idents != selects {
		out.all = true
	}
	if out.all {
		out.names = nil
	}
	return out
}

// ArgFields reports the argument members the rules that apply to tool
// read, so a caller holding the arguments undecoded can decode just those:
// ok is false when some rule needs the whole arguments. Evaluating those
// rules over a Struct of just these members (each as sent; absent ones
// absent) gives the same result as over the whole arguments.
func (rs *Rules) ArgFields(tool string) (names []string, ok bool) {
	if rs == nil {
		return nil, true
	}
	if !rs.fields.all { // the union over every rule: a few members more at most
		return rs.fields.names, true
	}
	var acc argFields
	for i := range rs.rules {
		r := &rs.rules[i]
		if len(r.Tools) > 0 && !matchAny(r.Tools, tool) {
			continue
		}
		if r.fields.all {
			return nil, false
		}
		for _, n := range r.fields.names {
			if !slices.Contains(acc.names, n) {
				acc.names = append(acc.names, n)
			}
		}
	}
	return acc.names, true
}

// hasComprehension reports whether the expression has a comprehension (a
// macro such as all, exists, map or filter).
func hasComprehension(a *celast.AST) bool {
	found := false
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		found = found || e.Kind() == celast.ComprehensionKind
	}))
	return found
}
