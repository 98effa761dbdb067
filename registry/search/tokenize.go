package search

import (
	"unicode"
	"unicode/utf8"
)

// Bounds on what one tool or one query contributes, so a hostile
// registration or query costs bounded work and memory.
const (
	// maxTokenBytes: a longer run of letters and digits is cut to this.
	maxTokenBytes = 48
	// maxNameTokens, maxParamTokens and maxDescTokens bound a tool's
	// terms per field; the rest of a long description is not indexed.
	maxNameTokens  = 32
	maxParamTokens = 256
	maxDescTokens  = 512
	// maxParamNames and maxSchemaDepth bound the walk over the input
	// schema for parameter names.
	maxParamNames  = 128
	maxSchemaDepth = 8
	// MaxQueryBytes and MaxQueryTerms bound a query.
	MaxQueryBytes = 1024
	MaxQueryTerms = 32
)

// stopWords are left out of descriptions and queries: they match nearly
// every tool and rank nothing.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"for": true, "from": true, "in": true, "into": true, "is": true, "it": true, "its": true, "of": true,
	"on": true, "or": true, "that": true, "the": true, "this": true, "to": true, "with": true,
	"me": true, "my": true, "i": true, "can": true, "you": true, "your": true, "which": true,
}

// tokens appends the terms of s to out, at most max of them: runs of
// letters and digits, split again at camelCase boundaries (getHTTPUrl →
// get http url) and between letters and digits, lowercased and stemmed.
// Stop words are dropped when dropStop is set.
func tokens(out []string, s string, max int, dropStop bool) []string {
	n := 0
	emit := func(word []rune) {
		if len(word) == 0 || n >= max {
			return
		}
		var buf [maxTokenBytes]byte
		b := buf[:0]
		for _, r := range word {
			r = unicode.ToLower(r)
			if len(b)+utf8.RuneLen(r) > maxTokenBytes {
				break
			}
			b = utf8.AppendRune(b, r)
		}
		t := stem(string(b))
		if dropStop && stopWords[t] {
			return
		}
		out = append(out, t)
		n++
	}
	var word []rune
	var prev rune
	runes := []rune(s)
	for i, r := range runes {
		if n >= max {
			break
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			emit(word)
			word, prev = word[:0], 0
			continue
		}
		if len(word) > 0 && boundary(prev, r, runes, i) {
			emit(word)
			word = word[:0]
		}
		word = append(word, r)
		prev = r
	}
	emit(word)
	return out
}

// boundary reports whether a new word starts at runes[i] (r) after prev:
// lower→Upper (getUser), Upper→Upper+lower (HTTPServer: the S), and
// between letters and digits (v2, sha256 stay apart from their digits).
func boundary(prev, r rune, runes []rune, i int) bool {
	switch {
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(runes) && unicode.IsLower(runes[i+1]):
		return true
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	}
	return false
}

// stem is Harman's S-stemmer: plurals to singulars (issues → issue,
// queries → query, addresses → address), nothing else. Stronger stemmers
// conflate tool words that differ (e.g. "user" and "uses").
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && w[n-3:] == "ies" && w[n-4] != 'e' && w[n-4] != 'a':
		return w[:n-3] + "y"
	case n > 4 && w[n-2:] == "es" && (w[n-3] == 's' || w[n-3] == 'x' || w[n-3] == 'z' || w[n-4:n-2] == "ch" || w[n-4:n-2] == "sh"):
		return w[:n-2]
	case n > 3 && w[n-1] == 's' && w[n-2] != 's' && w[n-2] != 'u' && w[n-2] != 'i':
		return w[:n-1]
	}
	return w
}
