package console

import (
	"html/template"
	"strings"
	"time"
)

// pages are the console's templates, each the layout with its content.
var pages = struct {
	login, errorPage, overview, catalog, tool, pending, audit, repairs, replay *template.Template
}{
	login:     page("login.html"),
	errorPage: page("error.html"),
	overview:  page("overview.html"),
	catalog:   page("catalog.html"),
	tool:      page("tool.html"),
	pending:   page("pending.html"),
	audit:     page("audit.html"),
	repairs:   page("repairs.html"),
	replay:    page("replay.html"),
}

var funcs = template.FuncMap{
	"join": strings.Join,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"short": func(h string) string {
		if len(h) > 12 {
			return h[:12]
		}
		return h
	},
}

func page(name string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name))
}
