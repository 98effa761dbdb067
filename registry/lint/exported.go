package lint

import "google.golang.org/protobuf/types/known/structpb"

// RepairedSuffix ends the message of an error finding downgraded to a
// warning because the profile's export rewrite (Fit) repairs it.
const RepairedSuffix = " (the export rewrites this: a warning, not an error)"

// LintExported lints name and schema against each profile as the tool
// would be exported (registry/export): an error the profile's rewrite
// (Fit) repairs becomes a warning, so a tool has error findings in a
// profile exactly when the export in that profile leaves it out. Errors
// found only in the rewritten schema (a rewrite that moved a keyword) are
// reported too, at their pointer in the rewritten schema. Profiles
// default to all, as Lint's.
func LintExported(name string, schema *structpb.Struct, profiles ...Profile) []Finding {
	if len(profiles) == 0 {
		profiles = allProfiles
	}
	var out []Finding
	seen := map[Profile]bool{}
	for _, p := range profiles {
		if seen[p] {
			continue
		}
		seen[p] = true
		found := Lint(name, schema, p)
		if !HasErrors(found) || schema == nil || (p != Gemini && p != OpenAIStrict) {
			out = append(out, found...)
			continue
		}
		m := schema.AsMap()
		Fit(p, m)
		fitted, err := structpb.NewStruct(m)
		if err != nil { // AsMap's output always converts back
			out = append(out, found...)
			continue
		}
		type key struct{ path, rule string }
		remaining := map[key]bool{}
		after := Lint(name, fitted, p)
		for _, f := range after {
			if f.Severity == SeverityError {
				remaining[key{f.Path, f.Rule}] = true
			}
		}
		before := map[key]bool{}
		for _, f := range found {
			if f.Severity == SeverityError {
				before[key{f.Path, f.Rule}] = true
				if !remaining[key{f.Path, f.Rule}] {
					f.Severity = SeverityWarning
					f.Message += RepairedSuffix
				}
			}
			out = append(out, f)
		}
		for _, f := range after {
			if f.Severity == SeverityError && !before[key{f.Path, f.Rule}] {
				out = append(out, f)
			}
		}
	}
	return out
}
