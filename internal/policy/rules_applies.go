package policy

// AppliesTo reports whether any rule would be evaluated for tool (its Tools
// patterns match, or it has none). The gateway's raw fast path uses it to
// know when the decoded arguments are needed; a nil or empty Rules applies
// to nothing.
func (rs *Rules) AppliesTo(tool string) bool {
	if rs == nil {
		return false
	}
	for i := range rs.rules {
		if t := rs.rules[i].Tools; len(t) == 0 || matchAny(t, tool) {
			return true
		}
	}
	return false
}
