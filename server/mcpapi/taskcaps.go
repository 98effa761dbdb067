package mcpapi

// Declaring tasks: a 2025-11-25 caller is told in initialize that the
// face takes task-augmented tools/call, lists and cancels tasks
// (capabilities.tasks) when a tool it may call takes tasks, as far as the
// face knows its upstream (tasksupport.go). The go-sdk's
// ServerCapabilities has no tasks field, so the SDK's answer to such an
// initialize is read back and the capability added to it; every other
// answer passes untouched.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// tasksCapability is what the face serves of tasks (tasks.go).
var tasksCapability = map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}

// isTasksInitialize: body is an initialize asking for RevisionTasks.
func (m *Server) isTasksInitialize(r *http.Request, body []byte) bool {
	if m.tasks == nil || m.taskUps == nil || r.Method != http.MethodPost || !bytes.Contains(body, []byte(`"initialize"`)) {
		return false
	}
	var w struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	return sdkDecode(body, &w) && w.Method == "initialize" && w.Params.ProtocolVersion == RevisionTasks
}

// serveTasksInitialize has next (the SDK) answer the initialize in r and
// adds capabilities.tasks to the answer when the caller is served tasks.
func (m *Server) serveTasksInitialize(w http.ResponseWriter, r *http.Request, next http.Handler) {
	cw := &captureWriter{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(cw, r)
	body := cw.buf.Bytes()
	if cw.status == http.StatusOK && m.tasksOffered(r.Context()) {
		if patched, ok := withTasksCapability(body, mediaTypeOf(cw.header.Get("Content-Type"))); ok {
			body = patched
		}
	}
	for k, v := range cw.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(cw.status)
	_, _ = w.Write(body)
}

// tasksOffered: some tool the caller may call takes tasks.
func (m *Server) tasksOffered(ctx context.Context) bool {
	for _, e := range m.reg.Snapshot().List() {
		sp := e.Tool.Spec
		if sp == nil || sp.MCPTool == nil {
			continue
		}
		if !m.tasksCarried(e) || !m.pipe.Visible(ctx, e.Tool.Name) {
			continue
		}
		if m.taskSupportOf(ctx, e) != "" {
			return true
		}
	}
	return false
}

// withTasksCapability is an initialize answer (one JSON-RPC response, as
// JSON or as one SSE event) with capabilities.tasks added; false when it
// is not one to change (an error, another revision).
func withTasksCapability(body []byte, mediaType string) ([]byte, bool) {
	data := body
	var prefix, suffix []byte
	if mediaType == "text/event-stream" {
		i := bytes.Index(body, []byte("data: "))
		if i < 0 {
			return nil, false
		}
		j := bytes.IndexByte(body[i:], '\n')
		if j < 0 {
			return nil, false
		}
		prefix, data, suffix = body[:i+len("data: ")], body[i+len("data: "):i+j], body[i+j:]
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, false
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return nil, false
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(resp.Result, &res) != nil || string(res["protocolVersion"]) != strconv.Quote(RevisionTasks) {
		return nil, false
	}
	var caps map[string]any
	if json.Unmarshal(res["capabilities"], &caps) != nil || caps == nil {
		return nil, false
	}
	caps["tasks"] = tasksCapability
	raw, err := json.Marshal(caps)
	if err != nil {
		return nil, false
	}
	res["capabilities"] = raw
	if resp.Result, err = json.Marshal(res); err != nil {
		return nil, false
	}
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return nil, false
	}
	return append(append(append([]byte{}, prefix...), out...), suffix...), true
}

func mediaTypeOf(v string) string {
	mt, _, _ := bytes.Cut([]byte(v), []byte(";"))
	return string(bytes.TrimSpace(mt))
}

// captureWriter keeps an answer to be read back before it is sent.
type captureWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
	wrote  bool
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(status int) {
	if !c.wrote {
		c.status, c.wrote = status, true
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	c.wrote = true
	return c.buf.Write(b)
}

// Flush is a no-op: the answer is sent whole once read back.
func (c *captureWriter) Flush() {}
