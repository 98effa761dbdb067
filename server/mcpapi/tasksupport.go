package mcpapi

// Which upstream tools take tasks, so tools/list offers a task-required
// tool only to a caller that can call it as a task (one on RevisionTasks,
// or on 2026-07-28 declaring the tasks extension: tasksext.go):
// to any other it could only ever fail ("requires task augmentation"); and
// tells that caller each such tool's execution.taskSupport, as its
// upstream does (withExecution).
//
// The registry does not hold a tool's execution (the go-sdk's Tool has no
// such field, so neither the importer nor the follower sees it): the face
// reads it from each upstream over HTTP (TaskUpstreams.TaskSupport, a raw
// tools/list), keeps it taskSupportTTL, and never waits on it. Until an
// upstream has been read its tools are listed as before (the read starts
// on the listing that finds it unknown, one at a time, a failure not
// retried for taskSupportRetry); each task-required tool learned is one
// log line saying why it is not listed to such callers.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/identity"
)

const (
	taskSupportTTL   = 60 * time.Second
	taskSupportRetry = 5 * time.Second
)

// taskSupportCache is what is known of each upstream's tools' execution.
type taskSupportCache struct {
	mu   sync.Mutex
	ups  map[taskSupportKey]*taskSupportEntry
	said map[string]bool // tools whose reason was logged
}

type taskSupportKey struct {
	url, env, file string
	tls            registry.TransportSecurity
}

type taskSupportEntry struct {
	tools map[string]string // upstream tool name → "optional" | "required"
	// uncarried: the upstream's session carries no task requests (a stdio
	// or legacy SSE one not on 2025-11-25): tools is what it declares.
	uncarried bool
	at        time.Time // when tools was read (zero: never)
	failed    time.Time
	reading   bool
	done      chan struct{} // closed when the read under way ends
}

func keyOfTaskSupport(sp *registry.MCPTool, ts *registry.TransportSecurity) taskSupportKey {
	k := taskSupportKey{url: sp.URL, env: sp.CredentialEnv, file: sp.CredentialFile}
	if ts != nil {
		k.tls = *ts
	}
	return k
}

// taskRequired reports whether the upstream tool of e is known to
// require tasks.
func (m *Server) taskRequired(ctx context.Context, e *registry.Entry) bool {
	return m.taskSupportOf(ctx, e) == "required"
}

// taskSupportOf is what is known of the upstream tool of e and tasks
// ("optional", "required"; "" for neither, or not known yet), starting a
// read of its upstream when that is not known.
func (m *Server) taskSupportOf(ctx context.Context, e *registry.Entry) string {
	sp := e.Tool.Spec.MCPTool
	k := keyOfTaskSupport(sp, e.Tool.Spec.TLS)
	c := &m.taskSupport
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ups == nil {
		c.ups, c.said = map[taskSupportKey]*taskSupportEntry{}, map[string]bool{}
	}
	ent := c.ups[k]
	if ent == nil {
		ent = &taskSupportEntry{}
		c.ups[k] = ent
	}
	now := time.Now()
	if !ent.reading && now.Sub(ent.at) > taskSupportTTL && now.Sub(ent.failed) > taskSupportRetry {
		ent.reading, ent.done = true, make(chan struct{})
		spec, ts := *sp, e.Tool.Spec.TLS
		go m.readTaskSupport(context.WithoutCancel(ctx), k, &spec, ts)
	}
	support := ent.tools[sp.Tool]
	if support == "required" && !c.said[e.Tool.Name] {
		c.said[e.Tool.Name] = true
		if ent.uncarried {
			m.log.Info("MCP tool requires task augmentation (its upstream's execution.taskSupport): listed to no caller, since its upstream is a stdio or legacy SSE server not on MCP "+RevisionTasks+", whose tasks the gateway does not carry",
				"tool", e.Tool.Name)
		} else if m.taskUps.IdentityMode(e.Tool.Name, sp) != identity.Static {
			m.log.Info("MCP tool requires task augmentation (its upstream's execution.taskSupport): listed to no caller, since the gateway relays no tasks of a tool under a per-user identity mode (their follow-ups would reach the upstream as the gateway)",
				"tool", e.Tool.Name)
		} else {
			m.log.Info("MCP tool requires task augmentation (its upstream's execution.taskSupport): listed only to callers that can use tasks — on MCP "+RevisionTasks+
				", or on "+RevisionResultType+" declaring the "+TasksExtension+" extension",
				"tool", e.Tool.Name)
		}
	}
	return support
}

func (m *Server) readTaskSupport(ctx context.Context, k taskSupportKey, sp *registry.MCPTool, ts *registry.TransportSecurity) {
	ctx, stop := context.WithTimeout(withoutSDKValues(ctx), capsProbeTimeout)
	defer stop()
	tools, err := m.taskUps.TaskSupport(ctx, sp, ts)
	c := &m.taskSupport
	c.mu.Lock()
	defer c.mu.Unlock()
	ent := c.ups[k]
	ent.reading = false
	close(ent.done)
	ent.uncarried = errors.Is(err, mcpupstream.ErrTasksUnsupported)
	if ent.uncarried && tools != nil {
		err = nil
	}
	if err != nil {
		ent.failed = time.Now()
		m.log.DebugContext(ctx, "MCP tasks: the upstream's tools' task support was not read", "error", err)
		return
	}
	ent.tools, ent.at = tools, time.Now()
}

// upstreamCarriesTasks: as far as the face knows, e's upstream session
// can carry the gateway's task requests (taskSupportEntry.uncarried).
func (m *Server) upstreamCarriesTasks(e *registry.Entry) bool {
	c := &m.taskSupport
	c.mu.Lock()
	defer c.mu.Unlock()
	ent := c.ups[keyOfTaskSupport(e.Tool.Spec.MCPTool, e.Tool.Spec.TLS)]
	return ent == nil || !ent.uncarried
}

// firstTaskSupportRead is the end of the read under way of e's upstream
// when it has never been read, else nil.
func (m *Server) firstTaskSupportRead(e *registry.Entry) <-chan struct{} {
	c := &m.taskSupport
	c.mu.Lock()
	defer c.mu.Unlock()
	if ent := c.ups[keyOfTaskSupport(e.Tool.Spec.MCPTool, e.Tool.Spec.TLS)]; ent != nil && ent.reading && ent.at.IsZero() {
		return ent.done
	}
	return nil
}

// withoutTaskRequired drops from a listing the tools its caller cannot
// call (taskHidden).
func (m *Server) withoutTaskRequired(ctx context.Context, usable bool, tools []*mcp.Tool) []*mcp.Tool {
	if m.taskUps == nil {
		return tools
	}
	snap := m.reg.Snapshot()
	out := tools[:0]
	for _, t := range tools {
		if e, ok := snap.Lookup(t.Name); ok && m.taskHidden(ctx, usable, e) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// taskHidden: e is not listed to a caller because its upstream requires
// tasks, and the caller cannot use tasks (usable: tasksUsable of its
// request) or the face carries none of the tool's (tasksCarried: a
// per-user identity mode, an upstream session that carries no task
// requests) — such a tool is listed to no one.
func (m *Server) taskHidden(ctx context.Context, usable bool, e *registry.Entry) bool {
	if m.taskUps == nil || e.Tool.Spec == nil || e.Tool.Spec.MCPTool == nil {
		return false
	}
	return (!usable || !m.tasksCarried(e)) && m.taskRequired(ctx, e)
}

// toolExecution is a tool's execution as MCP 2025-11-25 defines it
// (schema.ts, ToolExecution): taskSupport "optional" or "required"; a tool
// without one is "forbidden", the default, and gets no execution.
type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// listedTool is a tool as listed to a caller served tasks: the SDK's Tool
// (shared with every listing, so never changed) and its execution.
type listedTool struct {
	*mcp.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

// listToolsResult is the SDK's ListToolsResult with listedTools, member for
// member as the SDK writes it on RevisionTasks (no resultType there).
type listToolsResult struct {
	mcp.ResultBase
	mcp.Cacheable
	NextCursor string       `json:"nextCursor,omitempty"`
	Tools      []listedTool `json:"tools"`
}

// withExecution is lr as listed to a caller on rev: on RevisionTasks, when
// tasks are served and some listed tool's upstream takes them, each such
// tool carries execution.taskSupport; otherwise lr itself. A tool whose
// tasks are not relayed (tasksCarried: a per-user identity) has none.
// entries are the listed tools' registry entries, in lr's order (nil: gone).
func (m *Server) withExecution(ctx context.Context, rev string, lr *mcp.ListToolsResult, entries []*registry.Entry) mcp.Result {
	if m.tasks == nil || m.taskUps == nil || rev != RevisionTasks {
		return lr
	}
	var out *listToolsResult
	for i, t := range lr.Tools {
		support := ""
		if e := entries[i]; e != nil && e.Tool.Spec != nil && e.Tool.Spec.MCPTool != nil {
			if m.tasksCarried(e) {
				support = m.taskSupportOf(ctx, e)
			}
		}
		if support == "" && out == nil {
			continue
		}
		if out == nil {
			out = &listToolsResult{Cacheable: lr.Cacheable, NextCursor: lr.NextCursor, Tools: make([]listedTool, i, len(lr.Tools))}
			out.Meta = lr.Meta
			for j, before := range lr.Tools[:i] {
				out.Tools[j] = listedTool{Tool: before}
			}
		}
		lt := listedTool{Tool: t}
		if support != "" {
			lt.Execution = &toolExecution{TaskSupport: support}
		}
		out.Tools = append(out.Tools, lt)
	}
	if out == nil {
		return lr
	}
	return out
}
