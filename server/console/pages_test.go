package console

import (
	"testing"
)

// allPages lists every console page by its field, for the tests below.
func allPages() []*page {
	return []*page{pages.login, pages.errorPage, pages.overview, pages.catalog, pages.tool,
		pages.pending, pages.audit, pages.repairs, pages.replay}
}

// parsedAtInit is read during package initialisation, after pages (it
// depends on it) and before any test renders one: the pages parsed by then
// were parsed at start.
var parsedAtInit = func() (names []string) {
	for _, p := range allPages() {
		if p.t != nil {
			names = append(names, p.name)
		}
	}
	return names
}()

func TestPagesParseOnFirstRenderNotAtStart(t *testing.T) {
	if len(parsedAtInit) > 0 {
		t.Errorf("pages parsed at start: %v; want none until rendered (each stays live for good, console used or not)", parsedAtInit)
	}
}

// TestEveryPageParses is the check start-up parsing gave: a page whose
// template does not parse fails here, not on a caller's first render.
func TestEveryPageParses(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range allPages() {
		if seen[p.name] {
			t.Errorf("page %s listed twice", p.name)
		}
		seen[p.name] = true
		tpl := p.template()
		if tpl == nil || tpl.Lookup("layout") == nil {
			t.Errorf("page %s: no layout template", p.name)
		}
		if p.template() != tpl {
			t.Errorf("page %s parsed twice", p.name)
		}
	}
	entries, err := files.ReadDir("templates")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "layout.html" && !seen[n] {
			t.Errorf("templates/%s is no page's: add it to pages (and allPages) or remove it", n)
		}
	}
}
