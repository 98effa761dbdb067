package sdkjson

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCheckDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name, data string
		ok         bool
		reason     string
	}{
		{"at the bound", nest(MaxDepth), true, "the SDK accepts exactly MaxDepth levels"},
		{"one past", nest(MaxDepth + 1), false, "one level more is refused before decoding"},
		{"brackets in a string", `"` + strings.Repeat("[", MaxDepth+5) + `"`, true, "string contents are not nesting"},
		{"escaped quote", `["\"` + strings.Repeat("{", MaxDepth+5) + `"]`, true, "an escaped quote does not end the string"},
	} {
		err := CheckDepth([]byte(tc.data))
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrMaxDepth)) {
			t.Errorf("%s: CheckDepth = %v, want ok=%v (%s)", tc.name, err, tc.ok, tc.reason)
		}
	}
}

func TestUnmarshalIsCaseSensitive(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	if err := Unmarshal([]byte(`{"NAME":"x"} trailing`), &v); err != nil || v.Name != "" {
		t.Fatalf("Unmarshal = %v, %q; want no match for a differently cased key and trailing bytes ignored, as the SDK", err, v.Name)
	}
	if err := Unmarshal([]byte(strings.Repeat("[", MaxDepth+1)), &v); !errors.Is(err, ErrMaxDepth) {
		t.Fatalf("Unmarshal of deep nesting = %v; want ErrMaxDepth", err)
	}
}

// checkDepthByteWalk is the SDK's checkMaxDepth as it walks: byte by byte,
// strings skipped (CheckDepth before it skipped strings with IndexByte).
func checkDepthByteWalk(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > MaxDepth {
				return ErrMaxDepth
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// TestCheckDepthMatchesByteWalk: CheckDepth refuses exactly what the byte
// walk refuses, on any bytes — valid JSON or not, strings with runs of
// backslashes, unterminated strings — at a bound small enough to reach.
func TestCheckDepthMatchesByteWalk(t *testing.T) {
	for _, tc := range []struct{ data, reason string }{
		{`"\\"` + strings.Repeat("[", MaxDepth+1), "an even run: the quote ends the string"},
		{`"\\\"` + strings.Repeat("[", MaxDepth+1), "an odd run: the quote is escaped, the string goes on"},
		{`"\\\\\"\"` + strings.Repeat("[", MaxDepth+1) + `"`, "escaped quotes, then brackets inside the string"},
		{`[` + `"a\` + strings.Repeat("{", MaxDepth+1), "unterminated string ending in a backslash"},
		{strings.Repeat(`"x"[`, MaxDepth+1), "strings between the levels"},
	} {
		got, want := CheckDepth([]byte(tc.data)), checkDepthByteWalk([]byte(tc.data))
		if got != want {
			t.Errorf("%.40q: CheckDepth = %v, the byte walk %v (%s)", tc.data, got, want, tc.reason)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		// Nesting near the bound from a short prefix, then bytes from the
		// alphabet that matters.
		open := rapid.IntRange(MaxDepth-3, MaxDepth).Draw(t, "open")
		tail := rapid.SliceOf(rapid.SampledFrom([]byte(`"\{}[]a`))).Draw(t, "tail")
		data := append([]byte(strings.Repeat("[", open)), tail...)
		if got, want := CheckDepth(data), checkDepthByteWalk(data); got != want {
			t.Fatalf("%q: CheckDepth = %v, the byte walk %v", tail, got, want)
		}
	})
}
