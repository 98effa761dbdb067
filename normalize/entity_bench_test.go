package normalize

import (
	"slices"
	"strings"
	"testing"
)

// repeatTo repeats unit until the string is n bytes long (cut at n).
func repeatTo(unit string, n int) string {
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// nested returns "&" followed by unit repeated to n bytes: "&amp;amp;amp;…"
// needs one pass per level, so every pass up to the bound changes it.
func nested(unit string, n int) string {
	return "&" + strings.Repeat(unit, (n-1)/len(unit))
}

func BenchmarkDecodeEntities(b *testing.B) {
	const kib, mib = 64 << 10, 1 << 20
	cases := []struct{ name, in string }{
		{"adversarial-amp-64KiB", nested("amp;", kib)},
		{"adversarial-amp-1MiB", nested("amp;", mib)},
		{"adversarial-num-64KiB", nested("#38;", kib)},
		{"adversarial-num-1MiB", nested("#38;", mib)},
		// Many short references, each needing several passes.
		{"adversarial-short-64KiB", repeatTo("&amp;amp;amp;amp;amp;amp;amp;amp;amp;amp; ", kib)},
		{"adversarial-short-1MiB", repeatTo("&amp;amp;amp;amp;amp;amp;amp;amp;amp;amp; ", mib)},
		// Near-miss candidates: letter runs past the longest name, digit runs without ';'.
		{"adversarial-letters-64KiB", repeatTo("&"+strings.Repeat("a", 100), kib)},
		{"adversarial-letters-1MiB", repeatTo("&"+strings.Repeat("a", 100), mib)},
		{"adversarial-digits-64KiB", repeatTo("&#"+strings.Repeat("9", 100), kib)},
		{"adversarial-digits-1MiB", repeatTo("&#"+strings.Repeat("9", 100), mib)},
		{"no-amp", "The quick brown fox jumps over the lazy dog, a plain tool argument."},
		{"typical-jsx", "&lt;div className=&quot;app&quot;&gt;"},
		{"double-escaped-title", "Ember &amp;amp; Oak"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.in)))
			b.ReportAllocs()
			for b.Loop() {
				DecodeEntities(tc.in, DefaultMaxPasses)
			}
		})
	}
}

// BenchmarkEntityLookup is the measurement behind lookupEntity's choice of a
// map over binary search in the sorted generated table, on hits and misses.
func BenchmarkEntityLookup(b *testing.B) {
	names := []string{"amp", "lt", "gt", "quot", "nbsp", "NotEqualTilde", "CounterClockwiseContourIntegral", "foo", "Amp", "zwnj"}
	b.Run("sorted-table", func(b *testing.B) {
		for b.Loop() {
			for _, n := range names {
				_, _ = slices.BinarySearchFunc(entityTable[:], n, func(e entityEntry, n string) int { return strings.Compare(e.name, n) })
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			for _, n := range names {
				lookupEntity(n)
			}
		}
	})
}
