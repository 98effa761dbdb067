package lint

import (
	"sort"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders validation messages as the library's own default does.
var printer = message.NewPrinter(language.English)

// Anthropic validates every input_schema against the JSON Schema 2020-12
// metaschema and fails the request otherwise: "tools.18.custom.input_schema:
// JSON schema is invalid. It must match JSON Schema draft 2020-12
// (https://json-schema.org/draft/2020-12)." (github.com/acomagu/vscode-as-mcp-server/issues/6).
// The metaschema ships inside santhosh-tekuri/jsonschema, so no network.
const metaschema2020 = "https://json-schema.org/draft/2020-12/schema"

var loadMetaschema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return jsonschema.NewCompiler().Compile(metaschema2020)
})

func (l *linter) checkMetaschema() {
	meta, err := loadMetaschema()
	if err != nil {
		// The metaschema is embedded; failing to compile it is a build defect.
		panic("lint: compiling the embedded 2020-12 metaschema: " + err.Error())
	}
	err = meta.Validate(l.doc.AsInterface())
	if err == nil {
		return
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		l.add("", "schema-invalid-2020-12", SeverityError, "the schema is not valid JSON Schema 2020-12: "+err.Error())
		return
	}
	// Report the leaves only: the inner units restate them ("allOf failed").
	type leaf struct{ path, msg string }
	var leaves []leaf
	seen := map[leaf]bool{}
	var visit func(*jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			lf := leaf{pointer(e.InstanceLocation), e.ErrorKind.LocalizedString(printer)}
			if !seen[lf] {
				seen[lf] = true
				leaves = append(leaves, lf)
			}
			return
		}
		for _, c := range e.Causes {
			visit(c)
		}
	}
	visit(ve)
	sort.SliceStable(leaves, func(i, j int) bool { return leaves[i].path < leaves[j].path })
	for _, lf := range leaves {
		l.add(lf.path, "schema-invalid-2020-12", SeverityError, "Anthropic requires valid JSON Schema 2020-12: "+lf.msg)
	}
}

func pointer(tokens []string) string {
	out := ""
	for _, t := range tokens {
		out += "/" + escape(t)
	}
	return out
}
