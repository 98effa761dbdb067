package registry

import "regexp"

// NamePattern is the rule every tool name must match.
const NamePattern = `^[a-zA-Z0-9_.-]{1,64}$`

var nameRE = regexp.MustCompile(NamePattern)

// ValidateName reports a name that does not match NamePattern.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return &ToolError{Tool: name, Field: "name", Reason: "must match " + NamePattern}
	}
	return nil
}
