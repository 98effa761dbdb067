// Command entitygen writes normalize/entity_table.go: the WHATWG named
// character references that end in ';', taken from the Go standard library's
// copy of the table ($GOROOT/src/html/entity.go), so the build needs no
// network. Run it through `go generate ./normalize`.
//
// html/entity.go holds all 2,231 WHATWG names: 2,123 with ';' as live map
// entries, 106 legacy names without ';' (which RT-TOOL-8's reading never
// decodes, so they are dropped here) and two names, "nLt;" and "nGt;", only as
// comments, because package html cannot emit a replacement longer than its
// name. Those two are recovered from the comments, giving the 2,125 names
// that end in ';'. The generator refuses to write a table if any of these
// counts differs, so a changed upstream table is noticed, not absorbed.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Counts in the WHATWG table (https://html.spec.whatwg.org/entities.json).
const (
	wantTotal       = 2231 // every name, with or without ';'
	wantNoSemicolon = 106  // legacy names such as "amp" and "copy"
	wantCommented   = 2    // "nLt;" and "nGt;", commented out in html/entity.go
)

func main() {
	src := flag.String("src", "", "path of html/entity.go (default: $GOROOT/src/html/entity.go)")
	out := flag.String("o", "entity_table.go", "output file")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "entitygen:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	if src == "" {
		var err error
		if src, err = DefaultSource(); err != nil {
			return err
		}
	}
	code, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	table, err := Generate(code)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return os.WriteFile(out, table, 0o644)
}

// DefaultSource returns the path of the standard library's html/entity.go.
// `go generate` sets $GOROOT; otherwise ask the go command.
func DefaultSource() (string, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		b, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return "", fmt.Errorf("finding GOROOT: %w", err)
		}
		root = strings.TrimSpace(string(b))
	}
	if root == "" {
		return "", errors.New("cannot find GOROOT: set $GOROOT or pass -src")
	}
	return filepath.Join(root, "src", "html", "entity.go"), nil
}

type entry struct{ name, value string } // name without the trailing ';'

// commented matches the disabled two-code-point entries, e.g.
// `// "nLt;": {'\u226A', '\u20D2'},`.
var commented = regexp.MustCompile(`^//\s*"([A-Za-z0-9]+);":\s*\{('[^']+'),\s*('[^']+')\},?$`)

// Generate parses html/entity.go and returns the formatted entity_table.go.
func Generate(code []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "entity.go", code, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	byName := map[string]string{}
	total, noSemi, fromComments := 0, 0, 0
	add := func(name string, runes ...rune) error {
		total++
		base, ok := strings.CutSuffix(name, ";")
		if !ok {
			noSemi++ // legacy form: never decoded (RT-TOOL-8 reading)
			return nil
		}
		if base == "" || strings.IndexFunc(base, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) >= 0 {
			return fmt.Errorf("name %q is not alphanumeric", name)
		}
		if _, dup := byName[base]; dup {
			return fmt.Errorf("duplicate name %q", name)
		}
		byName[base] = string(runes)
		return nil
	}

	var maps int
	var walkErr error
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || walkErr != nil {
			return walkErr == nil
		}
		mt, ok := lit.Type.(*ast.MapType)
		if !ok {
			return true
		}
		pair := false
		switch v := mt.Value.(type) {
		case *ast.Ident: // map[string]rune
			if v.Name != "rune" {
				return true
			}
		case *ast.ArrayType: // map[string][2]rune
			pair = true
		default:
			return true
		}
		maps++
		for _, el := range lit.Elts {
			kv := el.(*ast.KeyValueExpr)
			name, err := stringLit(kv.Key)
			if err != nil {
				walkErr = err
				return false
			}
			var runes []rune
			if pair {
				for _, e := range kv.Value.(*ast.CompositeLit).Elts {
					r, err := runeLit(e)
					if err != nil {
						walkErr = err
						return false
					}
					runes = append(runes, r)
				}
			} else {
				r, err := runeLit(kv.Value)
				if err != nil {
					walkErr = err
					return false
				}
				runes = append(runes, r)
			}
			if err := add(name, runes...); err != nil {
				walkErr = err
				return false
			}
		}
		if pair { // recover the commented-out two-code-point entries
			for _, cg := range f.Comments {
				if cg.Pos() < lit.Lbrace || cg.End() > lit.Rbrace {
					continue
				}
				for _, c := range cg.List {
					m := commented.FindStringSubmatch(c.Text)
					if m == nil {
						continue
					}
					r1, err1 := strconv.Unquote(m[2])
					r2, err2 := strconv.Unquote(m[3])
					if err := errors.Join(err1, err2); err != nil {
						walkErr = fmt.Errorf("comment %q: %w", c.Text, err)
						return false
					}
					fromComments++
					if err := add(m[1]+";", []rune(r1+r2)...); err != nil {
						walkErr = err
						return false
					}
				}
			}
		}
		return false
	})
	if walkErr != nil {
		return nil, walkErr
	}
	if maps != 2 {
		return nil, fmt.Errorf("found %d entity maps, want 2 (entity and entity2)", maps)
	}
	if total != wantTotal || noSemi != wantNoSemicolon || fromComments != wantCommented {
		return nil, fmt.Errorf("found %d names (%d without ';', %d from comments), want %d (%d, %d)",
			total, noSemi, fromComments, wantTotal, wantNoSemicolon, wantCommented)
	}

	entries := make([]entry, 0, len(byName))
	for name, value := range byName {
		entries = append(entries, entry{name, value})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	var b bytes.Buffer
	b.WriteString("// Code generated by normalize/internal/entitygen from $GOROOT/src/html/entity.go. DO NOT EDIT.\n\n")
	b.WriteString("package normalize\n\n")
	fmt.Fprintf(&b, "// entityCount is the number of WHATWG named character references that end in ';'.\n")
	fmt.Fprintf(&b, "const entityCount = %d\n\n", len(entries))
	longest := 0
	for _, e := range entries {
		longest = max(longest, len(e.name))
	}
	fmt.Fprintf(&b, "// entityMaxName is the longest name's length, without '&' and ';'.\n")
	fmt.Fprintf(&b, "const entityMaxName = %d\n\n", longest)
	b.WriteString("// entityTable holds every WHATWG named character reference that ends in ';',\n")
	b.WriteString("// keyed by the name without '&' and ';', sorted by name in byte order.\n")
	b.WriteString("var entityTable = [entityCount]entityEntry{\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "\t{%q, %s},\n", e.name, strconv.QuoteToASCII(e.value))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

func stringLit(e ast.Expr) (string, error) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", fmt.Errorf("expected a string literal, got %T", e)
	}
	return strconv.Unquote(bl.Value)
}

func runeLit(e ast.Expr) (rune, error) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.CHAR {
		return 0, fmt.Errorf("expected a rune literal, got %T", e)
	}
	s, err := strconv.Unquote(bl.Value)
	if err != nil {
		return 0, err
	}
	return []rune(s)[0], nil
}
