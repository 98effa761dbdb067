package archtest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// kindMarkers are the identifiers that name one backend kind: its
// registry type and BackendSpec field, its Kind constant and registry
// implementation, the contract's oneof member and getter. A declaration
// naming two kinds is choosing between kinds.
var kindMarkers = map[registry.Kind][]string{
	registry.KindToolBackendService: {"KindToolBackendService", "toolBackendServiceKind"},
	registry.KindGRPCMethod:         {"GRPCMethod", "KindGRPCMethod", "grpcMethodKind", "GetGrpcMethod", "BackendSpec_GrpcMethod"},
	registry.KindHTTPOperation:      {"HTTPOperation", "KindHTTPOperation", "httpOperationKind", "GetHttpOperation", "BackendSpec_HttpOperation"},
	registry.KindMCPTool:            {"MCPTool", "KindMCPTool", "mcpToolKind", "GetMcpTool", "BackendSpec_McpTool"},
}

// kindsRegistry are the files that may choose between kinds: the
// registry's list and, at the two boundaries the registry cannot see
// (the contract's oneof, the backend adapters), one switch each.
var kindsRegistry = map[string]string{
	"registry/kinds.go":           "the kinds' registry: the list, KindOf's switch",
	"internal/toolproto/kinds.go": "the contract's oneof member ↔ registry.Kind",
	"server/backend/kinds.go":     "registry.Kind → its adapter",
}

// TestOnlyTheKindsRegistryKnowsTheKinds: outside kindsRegistry, no
// declaration (a function, a method, a var or type block) of hand-written
// code names two backend kinds, so nobody writes an if chain or switch on
// kinds again; each asks registry.KindOf and the kind's own code.
// Generated code (gen/) and tests are exempt: tests enumerate kinds on
// purpose.
func TestOnlyTheKindsRegistryKnowsTheKinds(t *testing.T) {
	t.Parallel()
	for _, k := range registry.Kinds() {
		if len(kindMarkers[k]) == 0 {
			t.Errorf("kind %s has no markers: add its identifiers to kindMarkers", k)
		}
	}
	marker := map[string]registry.Kind{}
	for k, names := range kindMarkers {
		for _, n := range names {
			marker[n] = k
		}
	}
	type pkg struct {
		ImportPath, Dir string
		GoFiles         []string
	}
	out := goList(t, "-json=ImportPath,Dir,GoFiles", "./...")
	dec := json.NewDecoder(strings.NewReader(strings.Join(out, " ")))
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, seenRegistry := 0, 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(p.ImportPath, module+"/gen/") {
			continue
		}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			rel, err := filepath.Rel(root, path)
			if err != nil {
				t.Fatal(err)
			}
			rel = filepath.ToSlash(rel)
			files++
			if _, ok := kindsRegistry[rel]; ok {
				seenRegistry++
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				named := map[registry.Kind]bool{}
				ast.Inspect(d, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok {
						if k, ok := marker[id.Name]; ok {
							named[k] = true
						}
					}
					return true
				})
				if len(named) > 1 {
					var kinds []string
					for k := range named {
						kinds = append(kinds, k.String())
					}
					sort.Strings(kinds)
					t.Errorf("%s: %s names kinds %s: only the kinds' registry (%s) chooses between kinds; ask registry.KindOf and put the kind's own code in its own file",
						rel, declName(d), strings.Join(kinds, ", "), strings.Join(sortedKeys(kindsRegistry), ", "))
				}
			}
		}
	}
	if files < 100 || seenRegistry != len(kindsRegistry) {
		t.Fatalf("saw %d files, %d of the %d kinds-registry files; the check would be vacuous", files, seenRegistry, len(kindsRegistry))
	}
}

func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			return "method " + types(d.Recv.List[0].Type) + "." + d.Name.Name
		}
		return "func " + d.Name.Name
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				return "type " + s.Name.Name
			case *ast.ValueSpec:
				return d.Tok.String() + " " + s.Names[0].Name
			}
		}
	}
	return "a declaration"
}

func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + types(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
