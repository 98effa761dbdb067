package pipeline

import (
	"context"

	"github.com/flowdrop/gateway/registry"
)

// TaskSlot is a call its face asked to run as a task (MCP tasks): the
// call passes every stage as any call does, and a backend that can run it
// so starts the task instead of waiting for the result, and says so in
// Created. A backend that cannot leaves Created nil; the face then refuses
// the call rather than answering a result it was not asked for.
type TaskSlot struct {
	// TTLMs is the lifetime the caller asked for, in ms (0: none asked).
	TTLMs int64
	// Created is the started task (set by the backend).
	Created *CreatedTask
}

// CreatedTask is a task a backend started: what the face needs to reach
// it again, from any replica. Session and ID are the upstream's and are
// never shown to a caller.
type CreatedTask struct {
	// Session is the upstream session the task lives in.
	Session string
	// ID is the upstream's task id.
	ID string
	// Dialect is how the upstream's task is reached
	// (mcpupstream.DialectTasks2025 or DialectTasksExtension).
	Dialect string
	// Status and the rest are as the upstream described the new task.
	Status        string
	StatusMessage string
	// TTLMs is the upstream's lifetime of the task (0: no limit).
	TTLMs         int64
	PollInterval  int64
	CreatedAt     string
	LastUpdatedAt string
}

type taskKey struct{}

// WithTask asks that the call in ctx run as a task.
func WithTask(ctx context.Context, s *TaskSlot) context.Context {
	return context.WithValue(ctx, taskKey{}, s)
}

// TaskFrom is the call's task slot, nil when it is an ordinary call.
func TaskFrom(ctx context.Context) *TaskSlot {
	s, _ := ctx.Value(taskKey{}).(*TaskSlot)
	return s
}

// GuardResultSize holds a result read later (a task's) to its tool's
// max_result_bytes, as a call's result is held (guardResultSize).
func GuardResultSize(e *registry.Entry, res Result) Result {
	return guardResultSize(&Call{Tool: e.Tool.Name, Entry: e}, res)
}
