package policy

import (
	"strconv"
	"unicode/utf8"
)

// Caller-supplied strings (tool names, call ids, subjects, client info,
// metadata) reach logs, audit lines and messages only as a bounded prefix:
// a model or client must not be able to make the gateway write megabytes
// per call. Bound is THE helper; everything that records such a string
// goes through it.

// MaxRecordedBytes bounds one caller-supplied string in a log or audit
// line, or in a message.
const MaxRecordedBytes = 128

// Bound returns s when it is at most MaxRecordedBytes long, else its
// prefix (cut at a UTF-8 boundary) followed by how long s was. A short s
// is returned as it is, without allocating.
func Bound(s string) string { return BoundTo(s, MaxRecordedBytes) }

// BoundTo is Bound with a limit of max bytes (for longer fields, such as a
// whole error message in a log line).
func BoundTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && cut > max-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
