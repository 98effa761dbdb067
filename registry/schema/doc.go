// Package schema is the gateway's JSON Schema engine: it compiles a tool's
// input schema, validates arguments against it with model-facing messages,
// and holds the fast paths that accept valid arguments without allocating.
//
// Schemas are compiled with santhosh-tekuri/jsonschema/v6: drafts 4, 6, 7,
// 2019-09 and 2020-12 chosen by $schema (2020-12 when absent); nothing is
// fetched, so any $ref outside the schema is refused at compilation.
// Integers must be whole and within ±2^53 (MaxSafeInteger), enforced by a
// keyword extension (a custom vocabulary) on every schema whose type allows
// "integer" but not "number", since structpb numbers are float64. NaN and
// ±Infinity, which a Struct can carry and JSON cannot, are refused
// everywhere before the schema.
//
// Validation work is bounded (cost.go): Compile refuses a schema one
// argument value could cost more than the evaluation bound to validate
// (alternatives multiplied along nesting and $ref), and ValidateWithin
// refuses arguments whose worst-case cost is over a step budget before
// evaluating anything; the fast validator also counts its steps and
// watches the call's context.
//
// Four kinds of error, kept apart: a *CompileError is a bad schema (its
// pointer names the place); a *ValidationError is arguments that do not
// satisfy the schema, with Violations a model can act on; a *BudgetError
// is arguments whose validation could take more than the budget; a
// *RuntimeError is the engine failing to judge — never the caller's
// fault, never shown as a violation.
//
// The fast validator is compiled from the *jsonschema.Schema jsonschema
// itself compiled and mirrors its evaluation for a subset of keywords; it
// only ever accepts, and jsonschema decides everything else. It is written
// once (eval.go), generic over two representations of the arguments: a
// decoded *structpb.Struct and its wire bytes (FastValidWire, read with
// internal/structwire). WithoutFastPaths compiles none, so every call takes
// the general path.
//
// The package may import jsonschema/v6, golang.org/x/text, protobuf's
// structpb, normalize (for the report whose skips and repairs validation
// explains and carries) and internal/structwire; it imports no gRPC and no
// net/http, and nothing else of the gateway.
package schema
