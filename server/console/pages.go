package console

import (
	"html/template"
	"strings"
	"sync"
	"time"
)

// pages are the console's templates, each the layout with its content.
var pages = struct {
	login, errorPage, overview, catalog, tool, pending, audit, repairs, replay *page
}{
	login:     newPage("login.html"),
	errorPage: newPage("error.html"),
	overview:  newPage("overview.html"),
	catalog:   newPage("catalog.html"),
	tool:      newPage("tool.html"),
	pending:   newPage("pending.html"),
	audit:     newPage("audit.html"),
	repairs:   newPage("repairs.html"),
	replay:    newPage("replay.html"),
}

// page is one console template, parsed on its first render: parsed at
// start, the nine stay live in every gateway, console used or not (~0.27 MB,
// which the collector's heap goal multiplies by five at --gc-percent 400;
// BENCHMARKS.md, "Where the gateway's peak RSS goes"). They are embedded, so
// a template that does not parse is a build's fault: TestEveryPageParses
// fails it before any gateway starts.
type page struct {
	name string
	once sync.Once
	t    *template.Template
}

func newPage(name string) *page { return &page{name: name} }

// template parses the page once and returns it.
func (p *page) template() *template.Template {
	p.once.Do(func() { p.t = parsePage(p.name) })
	return p.t
}

var funcs = template.FuncMap{
	"join": strings.Join,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"inc": func(i int) int { return i + 1 },
	"short": func(h string) string {
		if len(h) > 12 {
			return h[:12]
		}
		return h
	},
}

func parsePage(name string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name))
}
