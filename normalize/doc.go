// Package normalize implements RT-TOOL-8: a model's tool arguments are
// reconciled with the tool's own input schema before the tool is invoked.
//
// Two independent repairs run:
//
//   - JSON decoding (clauses 2–3): a top-level string argument is decoded as
//     JSON only when the schema declares that parameter array or object (and
//     never string), the string as sent is strict RFC 8259 JSON, the parsed
//     value has the declared shape, and nothing is lost or invented on the
//     way (exact numbers, no duplicate keys, depth ≤ MaxJSONDepth, no lone
//     surrogates). Otherwise the argument passes through and Report.Skipped
//     says why, for validation to report.
//   - Entity decoding (clause 4): every string leaf at any depth, including
//     inside just-decoded JSON, has well-formed HTML character references
//     decoded to a fixed point, bounded by WithMaxPasses. Keys are never
//     touched (clause 5).
//
// A schema is compiled once into a Plan, which is immutable and safe for
// concurrent use:
//
//	plan, err := normalize.CompileJSON(schemaJSON)
//	if err != nil { ... }                // *normalize.CompilationError
//	args, report := plan.Apply(args)     // args is never mutated
//	for _, r := range report.Repairs { log.Print(r.Path, r.Kind) }
//
// Apply returns its argument itself, allocating nothing, when no repair is
// needed; otherwise a copy-on-write result that may share unchanged
// sub-values with the input. ApplyInPlace mutates instead.
//
// On the wire bytes of a google.protobuf.Struct, NeedsRepairWire says
// without allocating whether Apply would do anything, and ApplyWireWithin
// repairs the bytes themselves: only the members needing repair are
// decoded and encoded again, the others copied as they came. Both are held
// equal to Apply on the decoded arguments by property tests.
//
// The package imports the standard library, protobuf (structpb, and proto
// to encode a repaired member) and, for the wire paths, internal/structwire
// (protowire) only: no gRPC, no net/http.
package normalize
