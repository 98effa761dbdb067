// Package lint checks a tool's name and input schema against what each model
// provider's tool-calling API actually accepts, so a schema that one provider
// rejects is caught at registration instead of breaking an agent's whole tool
// list at request time (one rejected tool fails the entire request).
//
// Profiles:
//
//   - openai: Chat Completions / Responses function tools, strict off.
//   - openai-strict: the same with "strict": true (Structured Outputs subset).
//   - anthropic: Messages API custom tools (input_schema).
//   - gemini: Gemini API FunctionDeclaration.parameters, the OpenAPI-3.0-subset
//     Schema message (not parametersJsonSchema, which takes JSON Schema).
//
// Each rule carries the source it was taken from in a comment. Errors are
// constraints a provider documents or is observed to enforce with a 400;
// warnings are constraints that are uncertain, model- or version-dependent,
// or that the API accepts but that leave the model guessing.
//
// The package is pure: it never follows a $ref while walking (so reference
// cycles cannot loop) and lints $defs/definitions where they are declared.
//
// It imports jsonschema/v6 and structpb; not the registry (which imports it).
package lint
