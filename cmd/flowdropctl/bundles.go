package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

const bundlesUsage = `usage: flowdropctl bundles <command> [flags]

A bundle is a named selection of tools (by name, glob or label selector),
served on the MCP face as its own endpoint /mcp/NAME and selectable with
tools list --bundle and tools export --bundle. Admin role.

commands:
  list             list the bundles
  get NAME         print one bundle as JSON
  put -f FILE [--expected-revision N]
                   create or replace the bundle(s) in FILE: one bundle or a
                   bundles: list, YAML or JSON ("-" reads stdin), e.g.
                     name: notes
                     description: Note taking
                     tools: [create_note]
                     globs: ["notes.*"]
                     label_selectors: ["team=boards,!beta"]
  put NAME [--tool T]... [--glob G]... [--label-selector S]... [--description D]
           [--expected-revision N]
                   create or replace one bundle from flags
  delete NAME [--expected-revision N]
                   delete a bundle (its tools stay)

Every command takes --timeout DUR and the connection flags below.
Exit status: 0 ok, 1 the gateway refused or failed, 2 bad usage or input.

` + connHelp

var bundlesGroup = &group{name: "bundles", usage: bundlesUsage, subs: []subcommand{
	{"list", noStdin(bundlesList)},
	{"get", noStdin(bundlesGet)},
	{"put", bundlesPut},
	{"delete", noStdin(bundlesDelete)},
}}

var bundlesCommand = bundlesGroup.command("manage the gateway's bundles (named tool selections, each its own MCP endpoint): list, get, put, delete")

func newBundlesFlags(sub, usage string, stderr io.Writer) *toolsFlags {
	f := newToolsFlags(sub, usage, stderr, 30*time.Second)
	f.fs.Init("flowdropctl bundles "+sub, flag.ContinueOnError)
	f.fs.Usage = func() { fmt.Fprintln(stderr, "usage: flowdropctl bundles "+usage); f.fs.PrintDefaults() }
	return f
}

func bundlesList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newBundlesFlags("list", "list [--addr HOST:PORT]", stderr)
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := client.ListBundles(ctx, &gatewayv1.ListBundlesRequest{})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		raw, err := protoJSON(resp)
		if err != nil {
			fmt.Fprintf(stderr, "error: encoding the bundles: %v\n", err)
			return exitCall
		}
		fmt.Fprintln(stdout, string(raw))
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREVISION\tSELECTS\tDESCRIPTION")
	for _, b := range resp.GetBundles() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", b.GetName(), b.GetRevision(), selectionSummary(b), firstLine(b.GetDescription()))
	}
	tw.Flush()
	return 0
}

// selectionSummary is a bundle's selections on one line.
func selectionSummary(b *gatewayv1.Bundle) string {
	var parts []string
	if n := len(b.GetTools()); n > 0 {
		parts = append(parts, fmt.Sprintf("%d tool(s)", n))
	}
	for _, g := range b.GetGlobs() {
		parts = append(parts, "glob "+g)
	}
	for _, s := range b.GetLabelSelectors() {
		parts = append(parts, "labels "+s)
	}
	return strings.Join(parts, "; ")
}

func bundlesGet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newBundlesFlags("get", "get NAME [--addr HOST:PORT]", stderr)
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := client.GetBundle(ctx, &gatewayv1.GetBundleRequest{Name: pos[0]})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	b, err := protoNames.Marshal(resp.GetBundle())
	var buf bytes.Buffer
	if err == nil {
		err = json.Indent(&buf, b, "", "  ")
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: encoding the bundle: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, buf.String())
	return 0
}

// stringList collects a repeated flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func bundlesPut(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newBundlesFlags("put", "put (-f FILE | NAME [--tool T]... [--glob G]... [--label-selector S]... [--description D]) [--expected-revision N] [--addr HOST:PORT]", stderr)
	file := f.fs.String("f", "", "bundle file, YAML or JSON: one bundle or a bundles: list (\"-\" reads stdin)")
	description := f.fs.String("description", "", "the bundle's description (with NAME)")
	var toolNames, globs, selectors stringList
	f.fs.Var(&toolNames, "tool", "a tool name the bundle holds (repeatable; with NAME)")
	f.fs.Var(&globs, "glob", "a glob over tool names, e.g. 'notes.*' (repeatable; with NAME)")
	f.fs.Var(&selectors, "label-selector", "a label selector, e.g. 'team=boards,!beta' (repeatable; with NAME)")
	var expected optionalRevision
	f.fs.Var(&expected, "expected-revision", "write only if the bundle's current revision is N (0: only if it does not exist)")
	want := 1
	for _, a := range args {
		if a == "-f" || strings.HasPrefix(a, "-f=") || a == "--f" || strings.HasPrefix(a, "--f=") {
			want = 0
		}
	}
	pos, code := f.parse(args, want, stderr)
	if code >= 0 {
		return code
	}
	var bundles []*gatewayv1.Bundle
	if *file != "" {
		if len(toolNames)+len(globs)+len(selectors) > 0 || *description != "" {
			fmt.Fprintln(stderr, "flowdropctl bundles put: -f FILE takes the bundle from the file; --tool, --glob, --label-selector and --description go with NAME")
			return 2
		}
		data, err := lintReadFile(*file, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "flowdropctl bundles put: %v\n", err)
			return 2
		}
		if bundles, err = parseBundleFile(data, lintDisplayName(*file)); err != nil {
			fmt.Fprintf(stderr, "flowdropctl bundles put: %v\n", err)
			return 2
		}
	} else {
		bundles = []*gatewayv1.Bundle{{Name: pos[0], Description: *description, Tools: toolNames, Globs: globs, LabelSelectors: selectors}}
		if _, err := registry.CompileBundle(bundleOf(bundles[0])); err != nil {
			fmt.Fprintf(stderr, "flowdropctl bundles put: %v\n", err)
			return 2
		}
	}
	if expected.v != nil && len(bundles) != 1 {
		fmt.Fprintf(stderr, "flowdropctl bundles put: --expected-revision applies to one bundle; the file holds %d\n", len(bundles))
		return 2
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	put := []json.RawMessage{}
	for i, b := range bundles {
		resp, err := client.PutBundle(ctx, &gatewayv1.PutBundleRequest{Bundle: b, ExpectedRevision: expected.v})
		if err != nil {
			left := len(bundles) - i - 1
			if f.out.json {
				writeJSON(stdout, map[string]any{"put": put, "error": newCallError(err), "not_sent": left})
				return exitCall
			}
			printToolsStatus(stderr, err)
			if left > 0 {
				fmt.Fprintf(stderr, "stopped: %d later bundle(s) in the file were not written\n", left)
			}
			return exitCall
		}
		if f.out.json {
			raw, err := protoJSON(resp)
			if err != nil {
				fmt.Fprintf(stderr, "error: encoding %s: %v\n", resp.GetBundle().GetName(), err)
				return exitCall
			}
			put = append(put, raw)
			continue
		}
		verb := "updated"
		if resp.GetCreated() {
			verb = "created"
		}
		fmt.Fprintf(stdout, "%s bundle %s (revision %d)\n", verb, resp.GetBundle().GetName(), resp.GetBundle().GetRevision())
	}
	if f.out.json {
		writeJSON(stdout, map[string]any{"put": put})
	}
	return 0
}

func bundlesDelete(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newBundlesFlags("delete", "delete NAME [--expected-revision N] [--addr HOST:PORT]", stderr)
	var expected optionalRevision
	f.fs.Var(&expected, "expected-revision", "delete only if the bundle's current revision is N")
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	if _, err := client.DeleteBundle(ctx, &gatewayv1.DeleteBundleRequest{Name: pos[0], ExpectedRevision: expected.v}); err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		writeJSON(stdout, map[string]any{"deleted": pos[0]})
		return 0
	}
	fmt.Fprintf(stdout, "deleted bundle %s\n", pos[0])
	return 0
}

// bundleFile is one bundle as a file writes it.
type bundleFile struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	Tools          []string `json:"tools"`
	Globs          []string `json:"globs"`
	LabelSelectors []string `json:"label_selectors"`
	Discovery      string   `json:"discovery"`
}

// parseBundleFile reads one bundle or a bundles: list (YAML or JSON, unknown
// fields refused) and checks each as the gateway will, so mistakes are
// caught before the gateway is called.
func parseBundleFile(data []byte, name string) ([]*gatewayv1.Bundle, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(js, &probe); err != nil {
		return nil, fmt.Errorf("%s: want one bundle or a bundles: list: %w", name, err)
	}
	var files []bundleFile
	if list, ok := probe["bundles"]; ok && len(probe) == 1 {
		if err := strictJSON(list, &files); err != nil {
			return nil, fmt.Errorf("%s: bundles: %w", name, err)
		}
	} else {
		var one bundleFile
		if err := strictJSON(js, &one); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files = []bundleFile{one}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no bundles", name)
	}
	seen := map[string]bool{}
	out := make([]*gatewayv1.Bundle, 0, len(files))
	for i, bf := range files {
		p := &gatewayv1.Bundle{Name: bf.Name, Description: bf.Description, Tools: bf.Tools, Globs: bf.Globs, LabelSelectors: bf.LabelSelectors, Discovery: bf.Discovery}
		if _, err := registry.CompileBundle(bundleOf(p)); err != nil {
			return nil, fmt.Errorf("%s: bundle %d: %w", name, i+1, err)
		}
		if seen[bf.Name] {
			return nil, fmt.Errorf("%s: bundle %q appears twice", name, bf.Name)
		}
		seen[bf.Name] = true
		out = append(out, p)
	}
	return out, nil
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func bundleOf(p *gatewayv1.Bundle) registry.Bundle {
	return registry.Bundle{Name: p.GetName(), Description: p.GetDescription(), Tools: p.GetTools(), Globs: p.GetGlobs(),
		LabelSelectors: p.GetLabelSelectors(), Discovery: registry.Discovery(p.GetDiscovery())}
}
