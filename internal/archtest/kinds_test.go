package archtest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

// kindMarkers are the identifiers that name one backend kind, derived
// from the registry and the contract so a new kind needs no row here: its
// BackendSpec field and type (found by asking registry.KindOf which kind
// setting the field makes) and Kind constant ("Kind" + the field), and
// the contract's oneof member's getter and wrapper type. A declaration
// naming two kinds is choosing between kinds.
func kindMarkers(t *testing.T) map[string]registry.Kind {
	t.Helper()
	m := map[string]registry.Kind{"KindToolBackendService": registry.KindToolBackendService}
	st := reflect.TypeFor[registry.BackendSpec]()
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Type.Kind() != reflect.Pointer {
			continue
		}
		spec := reflect.New(st)
		spec.Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		k, err := registry.KindOf(&registry.Tool{Spec: spec.Interface().(*registry.BackendSpec)})
		if err != nil {
			continue // not a kind (tls)
		}
		m[f.Name], m[f.Type.Elem().Name()], m["Kind"+f.Name] = k, k, k
	}
	oneof := (&gatewayv1.BackendSpec{}).ProtoReflect().Descriptor().Oneofs().ByName("kind")
	for i := range oneof.Fields().Len() {
		name := string(oneof.Fields().Get(i).Name())
		k, ok := registry.SpecKind(name)
		if !ok {
			t.Fatalf("the contract's oneof member %s is no registry kind", name)
		}
		var camel strings.Builder
		for _, part := range strings.Split(name, "_") {
			camel.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
		m["Get"+camel.String()], m["BackendSpec_"+camel.String()] = k, k
	}
	for _, k := range registry.Kinds() {
		if !slices.Contains(slices.Collect(maps.Values(m)), k) {
			t.Fatalf("kind %s has no marker: the check cannot see it", k)
		}
	}
	return m
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
	marker := kindMarkers(t)
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
