package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/flowdrop/gateway/registry/lint"
)

// lintMaxFile bounds what tools lint reads, so a wrong -f (a device, a huge
// log) fails fast instead of eating memory.
const lintMaxFile = 32 << 20

// lintProfileList collects --profile values, repeated or comma-separated.
type lintProfileList []lint.Profile

func (p *lintProfileList) String() string {
	parts := make([]string, len(*p))
	for i, v := range *p {
		parts[i] = string(v)
	}
	return strings.Join(parts, ",")
}

func (p *lintProfileList) Set(s string) error {
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		prof, ok := lint.ParseProfile(name)
		if !ok {
			var known []string
			for _, k := range lint.Profiles() {
				known = append(known, string(k))
			}
			return fmt.Errorf("unknown profile %q (want one of %s)", name, strings.Join(known, ", "))
		}
		*p = append(*p, prof)
	}
	return nil
}

// runToolsLint implements "flowdropctl tools lint -f FILE [--profile P]...".
// It prints one "PROFILE SEVERITY PATH RULE: MESSAGE" line per finding, with
// PATH a JSON Pointer into the file, and returns 0 when no finding is an
// error, 1 when one is, and 2 when the input or the flags are bad.
func runToolsLint(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowdropctl tools lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Errors stay one line; the full usage is printed only for -h.
	fs.Usage = func() {}
	file := fs.String("f", "", "tool file, YAML or JSON: one tool or a tools: list (\"-\" reads stdin)")
	var profiles lintProfileList
	fs.Var(&profiles, "profile", "provider profile to check: openai, openai-strict, anthropic or gemini (repeatable or comma-separated; default all)")
	out := addOutputFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: flowdropctl tools lint -f FILE [--profile openai|openai-strict|anthropic|gemini]...")
			fs.PrintDefaults()
			return 0
		}
		return 2 // the flag package has already printed the problem and usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flowdropctl tools lint: unexpected argument %q (pass the file with -f)\n", fs.Arg(0))
		return 2
	}
	if *file == "" {
		fmt.Fprintln(stderr, "flowdropctl tools lint: -f FILE is required")
		return 2
	}

	data, err := lintReadFile(*file, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl tools lint: %v\n", err)
		return 2
	}
	tools, err := parseLintFile(data)
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl tools lint: %s: %v\n", lintDisplayName(*file), err)
		return 2
	}

	type finding struct {
		Profile  string `json:"profile"`
		Severity string `json:"severity"`
		Path     string `json:"path"`
		Rule     string `json:"rule"`
		Message  string `json:"message"`
	}
	findings := []finding{}
	var nErr, nWarn int
	for _, t := range tools {
		for _, f := range lint.LintExported(t.name, t.schema, profiles...) {
			path := t.schemaPath + f.Path
			if f.Path == lint.NamePath {
				path = t.namePath
			}
			if out.json {
				findings = append(findings, finding{string(f.Profile), string(f.Severity), path, f.Rule, f.Message})
			} else {
				fmt.Fprintf(stdout, "%s %s %s %s: %s\n", f.Profile, f.Severity, path, f.Rule, f.Message)
			}
			if f.Severity == lint.SeverityError {
				nErr++
			} else {
				nWarn++
			}
		}
	}
	if out.json {
		writeJSON(stdout, map[string]any{"findings": findings, "errors": nErr, "warnings": nWarn, "tools": len(tools)})
	}
	fmt.Fprintf(stderr, "%d error(s), %d warning(s) in %d tool(s)\n", nErr, nWarn, len(tools))
	if nErr > 0 {
		return 1
	}
	return 0
}

func lintDisplayName(file string) string {
	if file == "-" {
		return "stdin"
	}
	return file
}

func lintReadFile(file string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if file == "-" {
		r = stdin
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, lintMaxFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", lintDisplayName(file), err)
	}
	if len(data) > lintMaxFile {
		return nil, fmt.Errorf("%s is larger than %d MiB", lintDisplayName(file), lintMaxFile>>20)
	}
	return data, nil
}

// lintParsedTool is one tool ready to lint, with where its parts sit in the file.
type lintParsedTool struct {
	name       string
	schema     *structpb.Struct
	namePath   string
	schemaPath string
}

// parseLintFile reads one tool ({name, input_schema, ...}) or the
// declarative {tools: [...]} list. input_schema is the registry's spelling;
// inputSchema is MCP's, accepted so a tools/list entry can be linted as is.
// Other fields (description, backend, timeout, labels) are not linted here.
func parseLintFile(data []byte) ([]lintParsedTool, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty")
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the file must hold one tool or a tools: list, got %s", lintKind(v))
	}
	toolsV, isList := doc["tools"]
	if !isList {
		t, err := lintToParsed(doc, "")
		if err != nil {
			return nil, err
		}
		return []lintParsedTool{t}, nil
	}
	for _, k := range []string{"name", "input_schema", "inputSchema"} {
		if _, ok := doc[k]; ok {
			return nil, fmt.Errorf("the file has both a tools: list and a top-level %q; use one form", k)
		}
	}
	list, ok := toolsV.([]any)
	if !ok {
		return nil, fmt.Errorf("tools: must be a list, got %s", lintKind(toolsV))
	}
	if len(list) == 0 {
		return nil, errors.New("tools: is empty")
	}
	out := make([]lintParsedTool, 0, len(list))
	for i, e := range list {
		at := "/tools/" + strconv.Itoa(i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: a tool must be an object, got %s", at, lintKind(e))
		}
		p, err := lintToParsed(m, at)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func lintToParsed(m map[string]any, at string) (lintParsedTool, error) {
	where := at
	if where == "" {
		where = "the tool"
	}
	nameV, ok := m["name"]
	if !ok || nameV == nil {
		return lintParsedTool{}, fmt.Errorf("%s: name is missing", where)
	}
	name, ok := nameV.(string)
	if !ok || name == "" {
		return lintParsedTool{}, fmt.Errorf("%s: name must be a non-empty string, got %s", where, lintKind(nameV))
	}
	where += " (" + strconv.Quote(name) + ")"
	key := "input_schema"
	raw, hasReg := m["input_schema"]
	if rawMCP, hasMCP := m["inputSchema"]; hasMCP {
		if hasReg {
			return lintParsedTool{}, fmt.Errorf("%s: has both input_schema and inputSchema", where)
		}
		raw, key, hasReg = rawMCP, "inputSchema", true
	}
	if !hasReg || raw == nil {
		return lintParsedTool{}, fmt.Errorf("%s: input_schema is missing", where)
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return lintParsedTool{}, fmt.Errorf("%s: %s must be an object, got %s", where, key, lintKind(raw))
	}
	s, err := structpb.NewStruct(obj)
	if err != nil {
		return lintParsedTool{}, fmt.Errorf("%s: %s: %v", where, key, err)
	}
	return lintParsedTool{name: name, schema: s, namePath: at + "/name", schemaPath: at + "/" + key}, nil
}

func lintKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int64, int:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
