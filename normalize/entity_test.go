package normalize

import (
	"html"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

func TestDecodeEntities(t *testing.T) {
	tests := []struct {
		in       string
		max      int
		want     string
		passes   int
		boundHit bool
		reason   string
	}{
		// Named references.
		{"&lt;div&gt;", 8, "<div>", 1, false, "basic named references"},
		{"Ember &amp;amp; Oak", 8, "Ember & Oak", 2, false, "RT-TOOL-8 example: doubly-escaped value resolves fully"},
		{"&amp;amp;", 8, "&", 2, false, "double escape needs two passes"},
		{"&amp;amp;amp;", 8, "&", 3, false, "triple escape: &amp;amp; then &amp; then &"},
		{"&amp;amp;amp;amp;", 2, "&amp;amp;", 2, true, "bound hit: left as after the last allowed pass"},
		{"&amp;amp;amp;", 3, "&", 3, false, "exactly enough passes is not a bound hit"},
		{"&amp;amp;", 1, "&amp;", 1, true, "bound of one pass"},
		{"&amp;", 0, "&amp;", 0, true, "no pass allowed: unchanged, but it would change"},
		{"&foo;", 0, "&foo;", 0, false, "no pass allowed and nothing to decode"},
		{"&NotEqualTilde;", 8, "\u2242\u0338", 1, false, "name decoding to two code points"},
		{"&nLt;", 8, "\u226A\u20D2", 1, false, "two code points wider than the name (missing from package html)"},
		{"&nGt;", 8, "\u226B\u20D2", 1, false, "two code points wider than the name (missing from package html)"},
		{"&CounterClockwiseContourIntegral;", 8, "\u2233", 1, false, "longest name (31 letters)"},
		{"&AMP;&COPY;", 8, "&\u00a9", 1, false, "upper-case aliases are table names"},
		{"&Amp;", 8, "&Amp;", 0, false, "names are case-sensitive: Amp is not a name"},
		{"&Afr;", 8, "\U0001D504", 1, false, "astral-plane result"},
		{"&semi;", 8, ";", 1, false, "reference decoding to ';'"},
		{"&amp;lt;", 8, "<", 2, false, "second pass sees the reference the first pass produced"},
		{"&a&#109;p;", 8, "&", 2, false, "a reference assembled across a decoded character"},

		// What is not a reference.
		{"https://x.test/?a=1&copy=2&param=3&times=4", 8, "https://x.test/?a=1&copy=2&param=3&times=4", 0, false, "legacy names without ';' in a URL are not decoded"},
		{"&amp", 8, "&amp", 0, false, "legacy &amp without ';' is not decoded"},
		{"&copy 2024", 8, "&copy 2024", 0, false, "legacy &copy without ';' is not decoded"},
		{"&notit;", 8, "&notit;", 0, false, "no longest-prefix match on a legacy name (&not) as html.UnescapeString does"},
		{"&foo;", 8, "&foo;", 0, false, "unknown name passes unchanged"},
		{"&;", 8, "&;", 0, false, "empty name"},
		{"a & b", 8, "a & b", 0, false, "bare ampersand"},
		{"&", 8, "&", 0, false, "& at end"},
		{"x&", 8, "x&", 0, false, "& at end after text"},
		{"&&", 8, "&&", 0, false, "two bare ampersands"},
		{"&&amp;", 8, "&&", 1, false, "bare ampersand before a reference"},
		{"&amp;&", 8, "&&", 1, false, "bare ampersand after a reference"},
		{"&#;", 8, "&#;", 0, false, "no digits"},
		{"&#x;", 8, "&#x;", 0, false, "no hex digits"},
		{"&#X;", 8, "&#X;", 0, false, "no hex digits, upper-case X"},
		{"&#", 8, "&#", 0, false, "truncated at #"},
		{"&#x", 8, "&#x", 0, false, "truncated at x"},
		{"&#38", 8, "&#38", 0, false, "numeric without ';'"},
		{"&#38 ;", 8, "&#38 ;", 0, false, "space before ';'"},
		{"&#x4g;", 8, "&#x4g;", 0, false, "non-hex digit before ';'"},
		{"&#a;", 8, "&#a;", 0, false, "hex digit without x"},
		{"& amp;", 8, "& amp;", 0, false, "space after &"},
		{"&" + strings.Repeat("a", 40) + ";", 8, "&" + strings.Repeat("a", 40) + ";", 0, false, "name longer than any table name"},
		{"&lt", 8, "&lt", 0, false, "name at end of input without ';'"},
		{"&l\u00e9;", 8, "&l\u00e9;", 0, false, "non-ASCII letter in name"},

		// Numeric references.
		{"&#38;", 8, "&", 1, false, "decimal"},
		{"&#x26;&#X26;&#x2A;&#x2a;", 8, "&&**", 1, false, "hex with x and X, upper and lower digits"},
		{"&#0000000000038;", 8, "&", 1, false, "leading zeros"},
		{"&#x0000000000000000000041;", 8, "A", 1, false, "hex leading zeros"},
		{"&#99999999999999999999999;", 8, "\uFFFD", 1, false, "decimal overflow: far above U+10FFFF, no integer overflow"},
		{"&#xFFFFFFFFFFFFFFFFFFFFFF;", 8, "\uFFFD", 1, false, "hex overflow"},
		{"&#4294967334;", 8, "\uFFFD", 1, false, "2^32+38 must not wrap to 38 ('&')"},
		{"&#x100000026;", 8, "\uFFFD", 1, false, "hex 2^32+0x26 must not wrap to '&'"},
		{"&#1114111;", 8, "\U0010FFFF", 1, false, "U+10FFFF is the largest code point (a noncharacter: decoded)"},
		{"&#x110000;", 8, "\uFFFD", 1, false, "just above U+10FFFF"},
		{"&#0;", 8, "\uFFFD", 1, false, "NUL becomes U+FFFD"},
		{"&#x0;", 8, "\uFFFD", 1, false, "hex NUL becomes U+FFFD"},
		{"&#xD800;", 8, "\uFFFD", 1, false, "first surrogate"},
		{"&#57343;", 8, "\uFFFD", 1, false, "last surrogate (0xDFFF)"},
		{"&#xD7FF;&#xE000;", 8, "\uD7FF\uE000", 1, false, "code points either side of the surrogates"},
		{"&#128;", 8, "\u20AC", 1, false, "windows-1252: 0x80 is the euro sign"},
		{"&#150;", 8, "\u2013", 1, false, "windows-1252: 0x96 is the en dash"},
		{"&#x9F;", 8, "\u0178", 1, false, "windows-1252: 0x9F is Y with diaeresis"},
		{"&#x81;&#x8D;&#x8F;&#x90;&#x9D;", 8, "\u0081\u008D\u008F\u0090\u009D", 1, false, "windows-1252 holes decode to the C1 control itself"},
		{"&#x7F;&#xA0;", 8, "\u007F\u00A0", 1, false, "either side of the windows-1252 range"},
		{"&#1;&#x0D;&#x1F;", 8, "\u0001\r\u001F", 1, false, "control characters decode to themselves (HTML: parse error, still emitted)"},
		{"&#xFFFE;&#xFDD0;&#x1FFFF;", 8, "\uFFFE\uFDD0\U0001FFFF", 1, false, "noncharacters decode to themselves (HTML: parse error, still emitted)"},
		{"&#38;#38;", 8, "&", 2, false, "numeric double escape"},

		// Text around references.
		{"", 8, "", 0, false, "empty string"},
		{"plain text", 8, "plain text", 0, false, "no ampersand"},
		{"Tom &amp; Jerry &lt;3", 8, "Tom & Jerry <3", 1, false, "mixed text"},
		{"caf\u00e9 &eacute; \u65e5\u672c&mdash;\U0001F600&#x1F600;", 8, "caf\u00e9 \u00e9 \u65e5\u672c\u2014\U0001F600\U0001F600", 1, false, "multi-byte UTF-8 around references"},
		{"&lt;div className=&quot;app&quot;&gt;", 8, "<div className=\"app\">", 1, false, "typical escaped JSX"},
		{"&amp;lt;b&amp;gt;", 8, "<b>", 2, false, "doubly escaped markup"},
	}
	for _, tc := range tests {
		got, passes, boundHit := DecodeEntities(tc.in, tc.max)
		if got != tc.want || passes != tc.passes || boundHit != tc.boundHit {
			t.Errorf("%s: DecodeEntities(%q, %d) = %q, %d, %v; want %q, %d, %v",
				tc.reason, tc.in, tc.max, got, passes, boundHit, tc.want, tc.passes, tc.boundHit)
		}
	}
}

func TestDecodeEntitiesOnce(t *testing.T) {
	tests := []struct {
		in, want string
		changed  bool
		reason   string
	}{
		{"&amp;amp;amp;", "&amp;amp;", true, "one level per pass"},
		{"&amp;lt;", "&lt;", true, "text a pass produces is not rescanned in that pass"},
		{"&#38;#38;", "&#38;", true, "numeric: one level per pass"},
		{"&copy=2", "&copy=2", false, "legacy name: unchanged"},
		{"none", "none", false, "no ampersand"},
	}
	for _, tc := range tests {
		got, changed := decodeEntitiesOnce(tc.in)
		if got != tc.want || changed != tc.changed {
			t.Errorf("%s: decodeEntitiesOnce(%q) = %q, %v; want %q, %v", tc.reason, tc.in, got, changed, tc.want, tc.changed)
		}
	}
}

// TestEntityTable checks the generated table's shape. The WHATWG table has
// 2,231 names; 106 of them are legacy forms without ';', which are never
// decoded, leaving 2,125 (the 2,123 live entries of package html plus the two,
// nLt; and nGt;, that it keeps only as comments).
func TestEntityTable(t *testing.T) {
	if len(entityTable) != 2125 {
		t.Errorf("entityTable has %d names, want 2125 (WHATWG's 2231 less 106 legacy names without ';')", len(entityTable))
	}
	if !sort.SliceIsSorted(entityTable[:], func(i, j int) bool { return entityTable[i].name < entityTable[j].name }) {
		t.Error("entityTable is not sorted; lookupEntity's binary search needs byte order")
	}
	longest := 0
	for i, e := range entityTable {
		if i > 0 && entityTable[i-1].name == e.name {
			t.Errorf("duplicate name %q", e.name)
		}
		for j := 0; j < len(e.name); j++ {
			if !isAlnum(e.name[j]) {
				t.Errorf("name %q is not alphanumeric; scanReference would never reach it", e.name)
			}
		}
		if n := utf8.RuneCountInString(e.value); n < 1 || n > 2 || !utf8.ValidString(e.value) {
			t.Errorf("%q decodes to %q, want one or two code points", e.name, e.value)
		}
		longest = max(longest, len(e.name))
		// Every name is found through the first-byte index.
		if v, ok := lookupEntity(e.name); !ok || v != e.value {
			t.Errorf("lookupEntity(%q) = %q, %v; want %q", e.name, v, ok, e.value)
		}
	}
	if longest != entityMaxName || entityMaxName != 31 {
		t.Errorf("longest name is %d bytes, entityMaxName %d; want both 31 (CounterClockwiseContourIntegral)", longest, entityMaxName)
	}
	for _, name := range []string{"amp", "lt", "NotEqualTilde", "nLt", "nGt", "CounterClockwiseContourIntegral", "zwnj"} {
		if _, ok := lookupEntity(name); !ok {
			t.Errorf("lookupEntity(%q) not found", name)
		}
	}
	for _, name := range []string{"Amp", "foo", "a", "zzzz", "0", "~", "CounterClockwiseContourIntegra", "\u00e9"} {
		if v, ok := lookupEntity(name); ok {
			t.Errorf("lookupEntity(%q) = %q, want not found", name, v)
		}
	}
}

// TestAgainstHTMLUnescape cross-checks with the standard library on inputs
// where both decoders must agree: every ';'-terminated name (package html
// lacks nLt; and nGt;) and numeric references up to U+10FFFF+1.
func TestAgainstHTMLUnescape(t *testing.T) {
	skipped := 0
	for _, e := range entityTable {
		ref := "&" + e.name + ";"
		got, _ := decodeEntitiesOnce(ref)
		if got != e.value {
			t.Errorf("decodeEntitiesOnce(%q) = %q, want %q", ref, got, e.value)
		}
		if e.name == "nLt" || e.name == "nGt" {
			skipped++
			continue
		}
		if want := html.UnescapeString(ref); got != want {
			t.Errorf("%s: got %q, html.UnescapeString gives %q", ref, got, want)
		}
	}
	if skipped != 2 {
		t.Errorf("skipped %d names, want 2 (nLt, nGt)", skipped)
	}
	for v := 0; v <= utf8.MaxRune+1; v++ {
		// Every value below 0x1000 (all the special cases live there or at the
		// surrogates), then a sample, always including the surrogate range edges.
		if v >= 0x1000 && v%251 != 0 && (v < 0xD7FE || v > 0xE001) && v < utf8.MaxRune-1 {
			continue
		}
		for _, ref := range []string{"&#" + strconv.Itoa(v) + ";", "&#x" + strconv.FormatInt(int64(v), 16) + ";"} {
			got, _ := decodeEntitiesOnce(ref)
			if want := html.UnescapeString(ref); got != want {
				t.Fatalf("%s: got %q, html.UnescapeString gives %q", ref, got, want)
			}
		}
	}
}

func TestDecodeEntitiesNoAlloc(t *testing.T) {
	tests := []struct {
		in     string
		reason string
	}{
		{"The quick brown fox jumps over the lazy dog", "no ampersand"},
		{"https://x.test/?a=1&copy=2&param=3&times=4", "URL with legacy names: nothing decodes"},
		{"a & b && c &foo; &#; &#x; &amp &" + strings.Repeat("q", 50) + ";", "ampersands but no well-formed reference"},
	}
	for _, tc := range tests {
		var out string
		allocs := testing.AllocsPerRun(100, func() { out, _, _ = DecodeEntities(tc.in, DefaultMaxPasses) })
		if allocs != 0 {
			t.Errorf("%s: DecodeEntities(%q) allocates %v times, want 0", tc.reason, tc.in, allocs)
		}
		if out != tc.in || unsafe.StringData(out) != unsafe.StringData(tc.in) {
			t.Errorf("%s: DecodeEntities(%q) = %q, want the input string itself", tc.reason, tc.in, out)
		}
	}
	// A decodable string allocates its result once.
	if allocs := testing.AllocsPerRun(100, func() { DecodeEntities("Tom &amp; Jerry", DefaultMaxPasses) }); allocs != 1 {
		t.Errorf("one-pass decode allocates %v times, want 1", allocs)
	}
	// At the bound, finding out that another pass would change the value builds nothing.
	if allocs := testing.AllocsPerRun(100, func() { DecodeEntities("&amp;amp;amp;", 1) }); allocs != 1 {
		t.Errorf("bound-hit decode allocates %v times, want 1", allocs)
	}
}

// TestDecodeEntitiesWork bounds the work on adversarial inputs by counting,
// not timing: passes never exceed the bound and, however many passes run, the
// passes share two buffers sized to the input (the benchmarks show the time).
func TestDecodeEntitiesWork(t *testing.T) {
	for _, tc := range []struct {
		in        string
		passes    int
		maxAllocs float64
		reason    string
	}{
		{"&" + strings.Repeat("amp;", 1<<14), DefaultMaxPasses, 2, "nested &amp;amp;…: every pass changes it"},
		{"&" + strings.Repeat("#38;", 1<<14), DefaultMaxPasses, 2, "nested &#38;#38;…: every pass changes it"},
		{strings.Repeat("&amp;amp; ", 1<<13), 2, 2, "many short double escapes"},
		{strings.Repeat("&"+strings.Repeat("a", 100), 1<<10), 0, 0, "long letter runs after &: no reference"},
		{strings.Repeat("&#"+strings.Repeat("9", 100), 1<<10), 0, 0, "long digit runs without ';': no reference"},
	} {
		_, passes, _ := DecodeEntities(tc.in, DefaultMaxPasses)
		if passes != tc.passes {
			t.Errorf("%s: %d passes, want %d", tc.reason, passes, tc.passes)
		}
		allocs := testing.AllocsPerRun(20, func() { DecodeEntities(tc.in, DefaultMaxPasses) })
		if allocs > tc.maxAllocs {
			t.Errorf("%s: %v allocations for %d passes, want at most %v", tc.reason, allocs, passes, tc.maxAllocs)
		}
	}
}

func FuzzDecodeEntities(f *testing.F) {
	for _, s := range []string{
		"", "plain", "&", "&&", "&amp;", "&amp;amp;amp;", "&#38;#38;#38;", "&#x26;", "&#X26;", "&#;", "&#x;",
		"&#0;", "&#xD800;", "&#99999999999999999999999;", "&#128;", "&NotEqualTilde;", "&nLt;",
		"https://x.test/?a=1&copy=2&param=3&times=4", "&a&#109;p;", "Ember &amp;amp; Oak",
		"caf\u00e9 &eacute;\U0001F600", "&#xFFFE;", "\xff&amp;", "&amp;amp;amp;amp;amp;amp;amp;amp;amp;amp;",
	} {
		f.Add(s, DefaultMaxPasses)
	}
	f.Add("&amp;amp;amp;", 1)
	f.Fuzz(func(t *testing.T, s string, maxPasses int) {
		checkDecodeProperties(t, fuzzInput(s), maxPasses%16) // keep the fuzzer fast; 0 and negative bounds are legal
	})
}

// TestDecodeEntitiesProperties runs the fuzz properties over a deterministic
// stream of strings built from reference fragments, so plain `go test` (and
// CI, which runs only the fuzz seeds) covers far more than the seeds.
func TestDecodeEntitiesProperties(t *testing.T) {
	parts := []string{"&", "#", "x", "X", ";", "amp", "lt", "a", "0", "9", "F", "\u00e9", "\xff", "nLt", "38", "1114112", " ", "NotEqualTilde"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50000 {
		var b strings.Builder
		for range r.IntN(24) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		checkDecodeProperties(t, b.String(), r.IntN(12)-2)
	}
}

func checkDecodeProperties(t *testing.T, s string, maxPasses int) {
	t.Helper()
	out, passes, boundHit := DecodeEntities(s, maxPasses)
	if passes < 0 || passes > max(maxPasses, 0) {
		t.Fatalf("%q: passes = %d with bound %d", s, passes, maxPasses)
	}
	if passes == 0 && out != s {
		t.Fatalf("0 passes but %q changed to %q", s, out)
	}
	if !strings.Contains(s, "&") && (out != s || passes != 0 || boundHit) {
		t.Fatalf("no '&' in %q but got %q, %d, %v", s, out, passes, boundHit)
	}
	if utf8.ValidString(s) && !utf8.ValidString(out) {
		t.Fatalf("valid UTF-8 %q decoded to invalid %q", s, out)
	}
	// Fixed point: unless the bound stopped it, decoding again changes nothing.
	again, p2, b2 := DecodeEntities(out, maxPasses)
	if !boundHit && (again != out || p2 != 0 || b2) {
		t.Fatalf("%q -> %q is not a fixed point: again %q, %d, %v", s, out, again, p2, b2)
	}
	// boundHit means exactly that one more pass would change the value.
	once, changed := decodeEntitiesOnce(out)
	if changed != boundHit || (changed && once == out) {
		t.Fatalf("%q -> %q: boundHit %v but one more pass changed=%v", s, out, boundHit, changed)
	}
	// Passes are single decodeEntitiesOnce steps: replaying them gives the same value.
	step := s
	for range passes {
		step, _ = decodeEntitiesOnce(step)
	}
	if step != out {
		t.Fatalf("%q: %d single passes give %q, DecodeEntities gave %q", s, passes, step, out)
	}
}
