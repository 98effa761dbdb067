package mcpimport

import "fmt"

// taskCallers names the callers the gateway serves tasks to
// (server/mcpapi/tasksupport.go decides the listing; this only says so).
const taskCallers = "MCP 2025-11-25, or 2026-07-28 declaring the io.modelcontextprotocol/tasks extension"

// TaskNote is the line an import prints for a tool whose upstream declares
// execution.taskSupport ts ("required" or "optional"; "" for any other,
// which needs no line), so the operator learns at import why a caller may
// not see the tool or call it as a task. uncarried: the gateway carries
// none of the upstream's tasks (a stdio or legacy SSE server on a revision
// other than 2025-11-25: the gateway speaks the 2026-07-28 tasks extension
// over streamable HTTP only).
func TaskNote(name, ts string, uncarried bool) string {
	switch {
	case ts == "required" && uncarried:
		return fmt.Sprintf("task-required %s: the upstream requires task augmentation for it (execution.taskSupport %q) and the gateway carries no tasks of this upstream (a stdio or legacy SSE server not on MCP 2025-11-25), so it is offered to no caller", name, ts)
	case ts == "required":
		return fmt.Sprintf("task-required %s: the upstream requires task augmentation for it (execution.taskSupport %q), so it is offered only to callers that can use tasks (%s): any other caller's call could only fail", name, ts, taskCallers)
	case ts == "optional" && uncarried:
		return fmt.Sprintf("task-optional %s: the upstream takes tasks for it (execution.taskSupport %q) but the gateway carries no tasks of this upstream (a stdio or legacy SSE server not on MCP 2025-11-25), so every caller calls it plainly", name, ts)
	case ts == "optional":
		return fmt.Sprintf("task-optional %s: the upstream takes tasks for it (execution.taskSupport %q); only callers that can use tasks (%s) call it as a task, any other calls it plainly", name, ts, taskCallers)
	}
	return ""
}
