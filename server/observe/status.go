package observe

import (
	"html/template"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Status is what the admin listener's status page (/) shows: the build, the
// gateway's readiness, the registry store, the policy, and each tool. It
// carries no credentials, no arguments and no backend secrets (a backend's
// target is shown: the page is for operators, on the admin listener only).
type Status struct {
	Version        string
	Ready          bool
	NotReady       string // why not, when not Ready
	Store          string // the store, e.g. "etcd at http://10.0.0.5:2379"
	StaleSeconds   float64
	PolicyHash     string // "" when unknown
	PolicyReloaded time.Time
	Tools          []ToolStatus
	MoreTools      int // tools not listed (the page lists at most MaxStatusTools)
	// PendingChanges is how many imported tools have an upstream change
	// held for approval (all of them, listed or not).
	PendingChanges int
	Generated      time.Time
}

// ToolStatus is one tool's row.
type ToolStatus struct {
	Name        string
	Revision    int64
	Kind        string // the backend kind
	Backend     string
	Findings    []string // provider lint findings
	Repairs     float64
	Denials     float64
	Invalid     float64
	LastError   string
	LastErrorAt time.Time
	// Pending are the kinds of the upstream change held for approval
	// (none: nothing pending), held since PendingSince; Edited: an admin
	// edited the imported tool's definition.
	Pending      []string
	PendingSince time.Time
	Edited       bool
}

// MaxStatusTools bounds the tools one page lists.
const MaxStatusTools = 500

// toolErrors keeps each tool's last error for the status page (label →
// error). Labels are registered names or "_unknown", so it stays bounded.
type toolErrors struct {
	mu   sync.Mutex
	last map[string]toolError
}

type toolError struct {
	msg string
	at  time.Time
}

func (e *toolErrors) set(label, msg string) {
	e.mu.Lock()
	if e.last == nil {
		e.last = map[string]toolError{}
	}
	e.last[label] = toolError{msg, time.Now()}
	e.mu.Unlock()
}

// LastError is the last error recorded for a tool label.
func (m *Metrics) LastError(tool string) (string, time.Time) {
	m.errs.mu.Lock()
	defer m.errs.mu.Unlock()
	e := m.errs.last[tool]
	return e.msg, e.at
}

// ToolCounts sums the per-tool counters (repairs, denials, validation
// failures) from the registry, for the status page.
func (m *Metrics) ToolCounts() map[string][3]float64 {
	out := map[string][3]float64{}
	fams, err := m.reg.Gather()
	if err != nil {
		return out
	}
	idx := map[string]int{"flowdrop_repairs_total": 0, "flowdrop_policy_denials_total": 1, "flowdrop_validation_failures_total": 2}
	for _, f := range fams {
		i, ok := idx[f.GetName()]
		if !ok {
			continue
		}
		for _, mt := range f.GetMetric() {
			tool := labelValue(mt, "tool")
			c := out[tool]
			c[i] += mt.GetCounter().GetValue()
			out[tool] = c
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// SetStatus gives the status page its source (the page says "starting"
// until then: the admin listener serves before the registry is loaded).
func (a *Admin) SetStatus(f func() Status) { a.status.Store(&f) }

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"join": strings.Join,
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="5">
<title>FlowDrop gateway status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em} table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4} .bad{color:#b00020} .ok{color:#0a7d32} .num{text-align:right} small{color:#666}
</style></head><body>
<h1>FlowDrop gateway</h1>
{{if .}}
<p id="readiness">{{if .Ready}}<span class="ok">ready</span>{{else}}<span class="bad">not ready: {{.NotReady}}</span>{{end}}
 · version <span id="version">{{.Version}}</span></p>
<p id="store">registry store: {{.Store}} · {{if eq .StaleSeconds 0.0}}<span class="ok">current</span>{{else}}<span class="bad">stale for {{printf "%.0f" .StaleSeconds}} s</span>{{end}}</p>
<p id="policy">policy: {{if .PolicyHash}}sha256 {{.PolicyHash}}{{else}}(hash not reported){{end}}{{if not .PolicyReloaded.IsZero}} · last reload {{ago .PolicyReloaded}}{{end}}</p>
{{if .PendingChanges}}<p id="pending"><span class="bad">{{.PendingChanges}} upstream change(s) held for approval</span> · <small>flowdropctl tools pending / diff / approve / reject</small></p>{{end}}
<table id="tools"><thead><tr><th>tool</th><th>revision</th><th>backend</th><th>lint</th><th class="num">repairs</th><th class="num">denials</th><th class="num">invalid</th><th>last error</th></tr></thead><tbody>
{{range .Tools}}<tr><td class="tool">{{.Name}}</td><td class="num">{{.Revision}}</td><td>{{.Kind}}<br><small>{{.Backend}}</small>{{if .Edited}}<br><small>edited by an admin</small>{{end}}{{if .Pending}}<br><span class="bad pending">pending upstream change: {{join .Pending ", "}}</span> <small>{{ago .PendingSince}}</small>{{end}}</td><td>{{if .Findings}}<small>{{join .Findings "; "}}</small>{{else}}<span class="ok">clean</span>{{end}}</td><td class="num">{{printf "%.0f" .Repairs}}</td><td class="num">{{printf "%.0f" .Denials}}</td><td class="num">{{printf "%.0f" .Invalid}}</td><td>{{if .LastError}}<span class="bad">{{.LastError}}</span> <small>{{ago .LastErrorAt}}</small>{{end}}</td></tr>
{{end}}</tbody></table>
{{if .MoreTools}}<p>… and {{.MoreTools}} more tools (see ListTools).</p>{{end}}
<p><small>generated {{.Generated.Format "2006-01-02 15:04:05 MST"}}; refreshes every 5 s</small></p>
{{else}}<p id="readiness"><span class="bad">starting: the registry is not loaded yet</span></p>{{end}}
</body></html>
`))

// serveStatus renders the page. The template escapes every value.
func (a *Admin) serveStatus(w http.ResponseWriter, _ *http.Request) {
	var s *Status
	if f := a.status.Load(); f != nil {
		v := (*f)()
		sort.Slice(v.Tools, func(i, j int) bool { return v.Tools[i].Name < v.Tools[j].Name })
		s = &v
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	statusPage.Execute(w, s)
}

// UpstreamHealth is one upstream MCP server as the console shows it:
// server/mcpfollow's UpstreamHealth, converted field for field (the
// console may not import the follower, which imports the backends).
type UpstreamHealth struct {
	Upstream    string
	Tools       []string
	Pending     int
	Listed      time.Time
	LastError   string
	LastErrorAt time.Time
	NotRunning  bool
}
