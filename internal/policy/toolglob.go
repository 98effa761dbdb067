package policy

import (
	"path"
	"strings"
)

// matchTool is path.Match(p, name) for a validated pattern p, answered
// without path.Match when that cannot change the answer: for a name of
// ASCII bytes without '/', '*' or '?' (every registry name,
// registry.NamePattern) and a pattern without character classes or
// escapes, path.Match's '*' (a run of non-'/' characters) and '?' (one
// non-'/' character) are matchURI's "any run" and "one byte". (matchURI
// would take a '*' or '?' in the name for the pattern's own.) Listings ask
// this for every name they pass over (ToolAllowed), and path.Match re-scans
// its pattern from the start for every position a '*' may take.
// TestMatchToolIsPathMatch holds the two equal.
func matchTool(p, name string) bool {
	if strings.ContainsAny(p, `[\`) || !plainName(name) {
		ok, _ := path.Match(p, name) // validated at construction: no error
		return ok
	}
	return matchURI(p, name)
}

// plainName: name is ASCII with no '/', '*' or '?'.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 0x80 || c == '/' || c == '*' || c == '?' {
			return false
		}
	}
	return true
}
