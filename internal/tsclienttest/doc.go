// Package tsclienttest drives the generated TypeScript client (gen/ts) with
// Node against a real gateway: its test runs tools/ts/invoke_tool_call.mjs,
// the README's example, with the runtime pinned in tools/ts/package-lock.json.
package tsclienttest
