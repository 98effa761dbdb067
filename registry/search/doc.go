// Package search is a lexical index over the registry's tools, for
// catalogs too large to list: Okapi BM25 over each tool's name (split on
// . _ - and camelCase), description and parameter names, kept current from
// the registry snapshot by diffing it against the one indexed (only
// changed tools are re-tokenized), and filtered by the caller's
// visibility at query time.
//
// Hand-written rather than bleve: a tool is a few dozen terms, BM25 over
// an in-memory postings table is ~500 lines, and the caller's visibility
// (globs per caller) has to be applied while ranking, which a general
// engine offers only as a post-filter over an over-fetched page. The index
// holds one posting (8 bytes) per distinct term of a tool, and points at
// the registry's entries instead of copying their text.
package search
