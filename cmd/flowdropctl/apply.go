package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/toolproto"
	"github.com/flowdrop/gateway/registry"
)

const applyUsage = `usage: flowdropctl apply -f DIR [--dry-run] [--prune] [--require-compatible] [--addr HOST:PORT]

Reconciles the registry's tools and bundles with the files under DIR (*.yaml,
*.yml, *.json, in every subdirectory). A file holds one tool or a tools: list,
in the gRPC API's Tool form with its field names (what "tools import ...
--dry-run" prints, and "tools list --json" items), or a bundles: list (what
"bundles put -f" takes), YAML or JSON. First the diff: each tool and bundle to
create, update (a unified diff against what the registry serves) or, with
--prune, delete (registered, in no file, of a kind some file declares: tool
files never prune bundles, nor bundle files tools); then, unless --dry-run,
the writes (tools first, then bundles), each conditional on the revision the diff was made
against: one changed by someone else meanwhile is refused
(Aborted/FailedPrecondition) and apply stops; run it again to see the new diff.
Exit 0 done (or nothing to do), 1 a write or the listing failed, 2 bad usage
or a file that does not read or compile.

`

var applyCommand = &command{
	name:    "apply",
	summary: "reconcile the registry with a directory of tool and bundle files: diff first, revision-checked writes, --prune",
	run:     interruptible(runApply),
}

// desired is what the files under DIR declare, by kind. A kind is read in
// readApplyFile's one switch and planned by its own function (planTools,
// planBundles); runApply makes the writes of every kind's plan.
type desired struct {
	tools   map[string]applyTool
	bundles map[string]applyBundle
	// toolFiles and bundleFiles: some file declares the kind. --prune
	// deletes only kinds a file declares, so a directory of tool files
	// never deletes the bundles, nor one of bundle files the tools.
	toolFiles, bundleFiles bool
}

// applyBeforeWrites, when set, runs between the diff and the writes (a
// test makes a concurrent change there).
var applyBeforeWrites func()

// applyTool is one tool a file declares, and the file.
type applyTool struct {
	tool *gatewayv1.Tool
	file string
}

// applyBundle is one bundle a file declares, and the file.
type applyBundle struct {
	bundle *gatewayv1.Bundle
	file   string
}

func runApply(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("flowdropctl apply", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, applyUsage); fset.PrintDefaults() }
	// Text only: the diff is for a person (--output json is not taken).
	f := &toolsFlags{fs: fset, conn: addConnFlags(fset), timeout: fset.Duration("timeout", 60*time.Second, "deadline for the whole command (0: none)"), out: &output{}}
	dir := fset.String("f", "", "directory of tool and bundle files (a single file works too)")
	dryRun := fset.Bool("dry-run", false, "print the diff and the plan; write nothing")
	prune := fset.Bool("prune", false, "also delete registered tools no file declares")
	requireCompat := fset.Bool("require-compatible", false, "refuse an update that would break existing callers")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "flowdropctl apply: -f DIR is required")
		return 2
	}
	want, err := readApplyDir(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl apply: %v\n", err)
		return 2
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	live, err := listAllTools(ctx, client)
	if err != nil {
		fmt.Fprintln(stderr, "flowdropctl apply: listing the registry:")
		printToolsStatus(stderr, err)
		return exitCall
	}
	liveBundles, err := client.ListBundles(ctx, &gatewayv1.ListBundlesRequest{})
	if err != nil {
		fmt.Fprintln(stderr, "flowdropctl apply: listing the registry's bundles:")
		printToolsStatus(stderr, err)
		return exitCall
	}
	plan, err := planTools(want.tools, live, *prune && want.toolFiles)
	if err == nil {
		var bundles applyPlan
		bundles, err = planBundles(want.bundles, liveBundles.GetBundles(), *prune && want.bundleFiles)
		plan = append(plan, bundles...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl apply: %v\n", err)
		return 2
	}
	for _, s := range plan {
		fmt.Fprint(stdout, s.diff)
	}
	fmt.Fprintln(stdout, plan.summary(len(want.tools)+len(want.bundles)))
	if *dryRun {
		return 0
	}
	if applyBeforeWrites != nil {
		applyBeforeWrites()
	}
	for i, s := range plan {
		var err error
		switch {
		case s.bundle == nil && s.op != opDelete:
			var resp *gatewayv1.RegisterToolResponse
			resp, err = client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: s.want, ExpectedRevision: &s.expected, RequireCompatible: *requireCompat})
			if err == nil {
				fmt.Fprintf(stdout, "%sd tool %s (revision %d)\n", s.op, s.name, resp.GetTool().GetRevision())
			}
		case s.bundle == nil:
			if _, err = client.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: s.name, ExpectedRevision: &s.expected}); err == nil {
				fmt.Fprintf(stdout, "deleted tool %s\n", s.name)
			}
		case s.op != opDelete:
			var resp *gatewayv1.PutBundleResponse
			resp, err = client.PutBundle(ctx, &gatewayv1.PutBundleRequest{Bundle: s.bundle, ExpectedRevision: &s.expected})
			if err == nil {
				fmt.Fprintf(stdout, "%sd bundle %s (revision %d)\n", s.op, s.name, resp.GetBundle().GetRevision())
			}
		default:
			if _, err = client.DeleteBundle(ctx, &gatewayv1.DeleteBundleRequest{Name: s.name, ExpectedRevision: &s.expected}); err == nil {
				fmt.Fprintf(stdout, "deleted bundle %s\n", s.name)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "flowdropctl apply: %s %s %s (at revision %d):\n", s.op, s.kind(), s.name, s.expected)
			printToolsStatus(stderr, err)
			if left := len(plan) - i - 1; left > 0 {
				fmt.Fprintf(stderr, "stopped: %d later change(s) not made; run apply again to see the diff as it is now\n", left)
			}
			return exitCall
		}
	}
	return 0
}

// readApplyDir reads every tool and bundle file under path (or path
// itself when it is a file), in lexical order; a tool or bundle declared
// twice is refused.
func readApplyDir(path string) (desired, error) {
	want := desired{tools: map[string]applyTool{}, bundles: map[string]applyBundle{}}
	var files []string
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return want, err
	}
	if len(files) == 0 {
		return want, fmt.Errorf("%s holds no .yaml, .yml or .json file", path)
	}
	var errs []error
	for _, file := range files {
		errs = append(errs, readApplyFile(file, &want))
	}
	return want, errors.Join(errs...)
}

// maxApplyFileBytes bounds one file: a registry of thousands of tools fits.
const maxApplyFileBytes = 64 << 20

// readApplyFile adds the file's declarations to want. The kind is told by
// the top-level member, in this one switch; an unknown one is refused.
func readApplyFile(file string, want *desired) error {
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	if st.Size() > maxApplyFileBytes {
		return fmt.Errorf("%s: larger than %d bytes", file, maxApplyFileBytes)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s is empty", file)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return fmt.Errorf("%s: the file must hold one tool, a tools: list or a bundles: list", file)
	}
	var tools []*gatewayv1.Tool
	switch {
	case top["name"] != nil && top["tools"] == nil:
		t := new(gatewayv1.Tool)
		if err := protojson.Unmarshal(js, t); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		tools, want.toolFiles = []*gatewayv1.Tool{t}, true
	case top["tools"] != nil && len(top) == 1:
		var list gatewayv1.ListToolsResponse
		if err := protojson.Unmarshal(js, &list); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		tools, want.toolFiles = list.GetTools(), true
	case top["bundles"] != nil && len(top) == 1:
		want.bundleFiles = true
		// bundles put -f's own reading: unknown fields refused, each
		// bundle checked as the registry will.
		bundles, err := parseBundleFile(data, file)
		if err != nil {
			return err
		}
		var errs []error
		for _, b := range bundles {
			if prev, dup := want.bundles[b.GetName()]; dup {
				errs = append(errs, fmt.Errorf("%s: bundle %q is also declared in %s", file, b.GetName(), prev.file))
				continue
			}
			want.bundles[b.GetName()] = applyBundle{bundle: b, file: file}
		}
		return errors.Join(errs...)
	default:
		return fmt.Errorf("%s: holds %s: want one tool (name: ...), a tools: list or a bundles: list", file, strings.Join(slices.Sorted(maps.Keys(top)), ", "))
	}
	var errs []error
	for _, t := range tools {
		if prev, dup := want.tools[t.GetName()]; dup {
			errs = append(errs, fmt.Errorf("%s: tool %q is also declared in %s", file, t.GetName(), prev.file))
			continue
		}
		// What the registry sets is not the file's to say.
		t.Revision = 0
		if o := t.GetOrigin(); o != nil {
			o.Edited, o.Pending = false, nil
		}
		rt, err := toolproto.FromProto(t)
		if err == nil {
			_, err = registry.Compile(rt) // the mistakes the registry would refuse, before anything is written
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		want.tools[t.GetName()] = applyTool{tool: t, file: file}
	}
	return errors.Join(errs...)
}

// listAllTools is every registered tool, by name.
func listAllTools(ctx context.Context, client gatewayv1.ToolRegistryServiceClient) (map[string]*gatewayv1.Tool, error) {
	out := map[string]*gatewayv1.Tool{}
	req := &gatewayv1.ListToolsRequest{PageSize: 1000}
	for {
		resp, err := client.ListTools(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, t := range resp.GetTools() {
			out[t.GetName()] = t
		}
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		if resp.GetNextPageToken() == req.GetPageToken() {
			return nil, errors.New("the gateway returned the same page token twice")
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

type applyOp string

const (
	opCreate applyOp = "create"
	opUpdate applyOp = "update"
	opDelete applyOp = "delete"
)

// applyStep is one write: the tool or bundle, the revision it is
// conditional on (0: must not exist), and its diff.
type applyStep struct {
	op   applyOp
	name string
	want *gatewayv1.Tool
	// bundle is set for a bundle's step (for a delete, the one served).
	bundle   *gatewayv1.Bundle
	expected int64
	diff     string
}

func (s applyStep) kind() string {
	if s.bundle != nil {
		return "bundle"
	}
	return "tool"
}

type applyPlan []applyStep

// planTools is the writes that make live what want declares (and, with
// prune, nothing else), by name; tools already as declared are left.
func planTools(want map[string]applyTool, live map[string]*gatewayv1.Tool, prune bool) (applyPlan, error) {
	var plan applyPlan
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		l, exists := live[name]
		if exists && sameTool(w.tool, l) {
			continue
		}
		s := applyStep{op: opCreate, name: name, want: w.tool}
		from, oldText := "/dev/null", ""
		if exists {
			s.op, s.expected = opUpdate, l.GetRevision()
			from = fmt.Sprintf("registry/%s (revision %d)", name, l.GetRevision())
			var err error
			if oldText, err = toolText(l); err != nil {
				return nil, err
			}
		}
		newText, err := toolText(w.tool)
		if err != nil {
			return nil, err
		}
		s.diff = udiff.Unified(from, w.file+" "+name, oldText, newText)
		plan = append(plan, s)
	}
	if prune {
		for _, name := range slices.Sorted(maps.Keys(live)) {
			if _, declared := want[name]; declared {
				continue
			}
			l := live[name]
			oldText, err := toolText(l)
			if err != nil {
				return nil, err
			}
			plan = append(plan, applyStep{op: opDelete, name: name, expected: l.GetRevision(),
				diff: udiff.Unified(fmt.Sprintf("registry/%s (revision %d)", name, l.GetRevision()), "/dev/null", oldText, "")})
		}
	}
	return plan, nil
}

// planBundles is the bundle writes that make live what want declares
// (and, with prune, nothing else), by name; bundles already as declared
// are left.
func planBundles(want map[string]applyBundle, live []*gatewayv1.Bundle, prune bool) (applyPlan, error) {
	served := make(map[string]*gatewayv1.Bundle, len(live))
	for _, b := range live {
		served[b.GetName()] = b
	}
	var plan applyPlan
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		newText, err := bundleText(w.bundle)
		if err != nil {
			return nil, err
		}
		s := applyStep{op: opCreate, name: name, bundle: w.bundle}
		from, oldText := "/dev/null", ""
		if l, exists := served[name]; exists {
			if oldText, err = bundleText(l); err != nil {
				return nil, err
			}
			if oldText == newText {
				continue
			}
			s.op, s.expected = opUpdate, l.GetRevision()
			from = fmt.Sprintf("registry/bundles/%s (revision %d)", name, l.GetRevision())
		}
		s.diff = udiff.Unified(from, w.file+" bundle "+name, oldText, newText)
		plan = append(plan, s)
	}
	if prune {
		for _, name := range slices.Sorted(maps.Keys(served)) {
			if _, declared := want[name]; declared {
				continue
			}
			l := served[name]
			oldText, err := bundleText(l)
			if err != nil {
				return nil, err
			}
			plan = append(plan, applyStep{op: opDelete, name: name, bundle: l, expected: l.GetRevision(),
				diff: udiff.Unified(fmt.Sprintf("registry/bundles/%s (revision %d)", name, l.GetRevision()), "/dev/null", oldText, "")})
		}
	}
	return plan, nil
}

// bundleText is a bundle as a bundles: file holds it (no revision), the
// comparison and the diff alike: the registry stores a bundle as written.
func bundleText(b *gatewayv1.Bundle) (string, error) {
	c := proto.Clone(b).(*gatewayv1.Bundle)
	c.Revision = 0
	return sortedJSON(c)
}

// sameTool: the file's tool is what the registry serves (the registry's
// own comparison, and the same upstream origin).
func sameTool(want, live *gatewayv1.Tool) bool {
	w, err1 := toolproto.FromProto(want)
	l, err2 := toolproto.FromProto(live)
	if err1 != nil || err2 != nil {
		return false
	}
	return registry.SameDefinition(w, l) && proto.Equal(originOf(want), originOf(live)) &&
		bytes.Equal(want.GetSpec().GetGrpcMethod().GetDescriptors(), live.GetSpec().GetGrpcMethod().GetDescriptors())
}

// originOf is the part of a tool's origin a file says: the upstream it
// follows. The digest of the upstream's definition, edited and pending are
// the registry's bookkeeping (it computes the digest when a write has none).
func originOf(t *gatewayv1.Tool) *gatewayv1.ToolOrigin {
	o := t.GetOrigin()
	if o == nil || o.GetMcpUpstream() == "" {
		return nil
	}
	return &gatewayv1.ToolOrigin{McpUpstream: o.GetMcpUpstream()}
}

// toolText is a tool as its file would hold it (no revision), indented
// JSON with sorted keys: a line diff of two reads well.
func toolText(t *gatewayv1.Tool) (string, error) {
	c := proto.Clone(t).(*gatewayv1.Tool)
	c.Revision = 0
	if o := originOf(t); o != nil || c.Origin != nil {
		c.Origin = o
	}
	return sortedJSON(c)
}

// sortedJSON is m in the API's field names as indented JSON with sorted
// keys: a line diff of two reads well.
func sortedJSON(m proto.Message) (string, error) {
	raw, err := protoNames.Marshal(m)
	if err != nil {
		return "", err
	}
	var v any // re-encoded: encoding/json sorts keys, protojson's order is not stable
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// summary is the plan in one line.
func (p applyPlan) summary(declared int) string {
	n := map[applyOp]int{}
	for _, s := range p {
		n[s.op]++
	}
	unchanged := declared - n[opCreate] - n[opUpdate]
	return fmt.Sprintf("plan: %d to create, %d to update, %d to delete, %d unchanged", n[opCreate], n[opUpdate], n[opDelete], unchanged)
}
