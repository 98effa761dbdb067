package mcpimport

import (
	"strings"
	"testing"
)

func TestTaskNote(t *testing.T) {
	cases := []struct {
		reason, ts string
		uncarried  bool
		want       string
	}{
		{"a task-required tool over HTTP is offered only to callers that can use tasks", "required", false, "offered only to callers that can use tasks"},
		{"a task-required tool of an upstream whose tasks are not carried is offered to no caller", "required", true, "offered to no caller"},
		{"a task-optional tool over HTTP is a task only for callers that can use tasks", "optional", false, "only callers that can use tasks"},
		{"a task-optional tool of an upstream whose tasks are not carried is called plainly", "optional", true, "every caller calls it plainly"},
		{"a tool that takes no tasks needs no line", "", false, ""},
		{"forbidden is no task support", "forbidden", false, ""},
	}
	for _, c := range cases {
		got := TaskNote("p.t", c.ts, c.uncarried)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: TaskNote(%q, uncarried %v) = %q, want it to say %q", c.reason, c.ts, c.uncarried, got, c.want)
		}
	}
}
