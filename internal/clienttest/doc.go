// Package clienttest drives the generated agent clients against a real
// gateway: its tests run the examples of docs/agents.md — tools/ts/invoke_tool_call.mjs
// with Node on gen/ts (runtime pinned in tools/ts/package-lock.json), and
// tools/python/invoke_tool_call.py with Debian's python3-grpcio on gen/python.
package clienttest
