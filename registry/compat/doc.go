// Package compat decides whether a new revision of a tool's input schema
// still accepts every argument object the old revision accepted, and when
// it may not, names each narrowing by JSON Pointer and keyword.
//
// It is a pure library over decoded JSON (map[string]any, as
// structpb.Struct.AsMap gives): the registry's admission
// (--require-compatible) and the MCP definition-pinning approvals
// (internal/mcppin) call it through registry.CheckCompatibility.
//
// The answer is one-sided on purpose: "compatible" is a promise (every
// value the old schema accepted, the new one accepts too — a property test
// holds it to that against santhosh-tekuri/jsonschema), while a finding
// may be a change that happens to refuse nothing (a new "pattern" is
// reported without comparing regular expressions). What it judges:
//
//   - types: a type the old admitted and the new does not ("integer" is
//     within "number");
//   - enum and const: an old enum or const is checked value by value
//     against the new schema (its exact validator); a new enum or const
//     narrows an open set;
//   - numeric bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum,
//     multipleOf) and size bounds (minLength, maxLength, minItems, maxItems,
//     minProperties, maxProperties) that admit less;
//   - a new or changed pattern, format, contentEncoding, contentMediaType,
//     uniqueItems;
//   - objects: a property removed or newly required, a property's schema
//     narrowed, "additionalProperties" false or narrower at any level;
//   - arrays: "items" and "prefixItems" compared position by position;
//   - anyOf/oneOf: each old branch must fit some new branch (a removed
//     branch is reported); a new oneOf branch that could match the same
//     value as another is reported, since oneOf refuses a value matching
//     two; allOf and $ref siblings are conjunctions;
//   - $ref: local references are resolved on both sides and compared; a
//     reference cycle is bounded by assuming a pair already being compared
//     is compatible (sound for finite values);
//   - keywords compared only for equality (not, if/then/else,
//     patternProperties, propertyNames, dependentRequired,
//     dependentSchemas, contains, unevaluated*): any change is reported.
//
// A key the old schema did not declare, under an absent
// additionalProperties, is not part of its contract: a new optional
// property is compatible (an explicit additionalProperties schema is a
// contract, and is compared).
//
// Hostile schemas get bounded work: past MaxNodes schema values, MaxDepth
// nesting or MaxSteps comparisons, or with what it cannot resolve ($ref
// outside the document, $dynamicRef, a nested $id), the answer is the
// single finding "too-complex" — breaking — unless both documents are
// identical.
package compat
