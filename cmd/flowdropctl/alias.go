package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// keyValues is a repeatable KEY=VALUE flag.
type keyValues struct {
	keys, values []string
}

func (kv *keyValues) String() string { return strings.Join(kv.keys, ",") }

func (kv *keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want PROPERTY=VALUE, got %q", s)
	}
	if slices.Contains(kv.keys, k) {
		return fmt.Errorf("property %q given twice", k)
	}
	kv.keys, kv.values = append(kv.keys, k), append(kv.values, v)
	return nil
}

// toolsAlias implements `flowdropctl tools alias NAME --target T`: it
// registers an alias of T (registry.Alias) — its own description and
// narrower schema, fixed arguments (--fixed PROPERTY=JSON, a bare word
// being a string) and arguments injected from the caller's identity
// (--inject PROPERTY=subject|auth-method|claim:NAME). Without --schema the
// alias's schema is the target's less the properties the alias sets;
// without --description, the target's description.
func toolsAlias(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("alias", "alias NAME --target TOOL [--description D] [--schema FILE] [--fixed P=JSON]... [--inject P=SOURCE]... [--expected-revision N]", stderr, 30*time.Second)
	target := f.fs.String("target", "", "the registered tool the alias offers")
	desc := f.fs.String("description", "", "the alias's description (default: the target's)")
	schemaFile := f.fs.String("schema", "", "the alias's input schema, a JSON or YAML file; it may only narrow the target's (default: the target's less what the alias sets)")
	var fixed, inject keyValues
	f.fs.Var(&fixed, "fixed", "PROPERTY=VALUE the gateway sets on every call (VALUE is JSON, or a string); repeatable")
	f.fs.Var(&inject, "inject", "PROPERTY=SOURCE from the caller: subject, auth-method or claim:NAME; repeatable")
	var expected optionalRevision
	f.fs.Var(&expected, "expected-revision", "register only if the alias's current revision is N (0: only if it does not exist)")
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	if *target == "" {
		fmt.Fprintln(stderr, "flowdropctl tools alias: --target TOOL is required")
		return 2
	}
	spec := &gatewayv1.ToolAlias{Target: *target, InjectedArguments: map[string]string{}}
	if len(fixed.keys) > 0 {
		m := map[string]any{}
		for i, k := range fixed.keys {
			var v any
			if err := json.Unmarshal([]byte(fixed.values[i]), &v); err != nil {
				v = fixed.values[i] // a bare word: a string
			}
			m[k] = v
		}
		s, err := structpb.NewStruct(m)
		if err != nil {
			fmt.Fprintf(stderr, "flowdropctl tools alias: --fixed: %v\n", err)
			return 2
		}
		spec.FixedArguments = s
	}
	for i, k := range inject.keys {
		spec.InjectedArguments[k] = inject.values[i]
	}
	var schema *structpb.Struct
	if *schemaFile != "" {
		data, err := os.ReadFile(*schemaFile)
		if err != nil {
			fmt.Fprintf(stderr, "flowdropctl tools alias: --schema: %v\n", err)
			return 2
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			fmt.Fprintf(stderr, "flowdropctl tools alias: --schema %s: %v\n", *schemaFile, err)
			return 2
		}
		if schema, err = structpb.NewStruct(m); err != nil {
			fmt.Fprintf(stderr, "flowdropctl tools alias: --schema %s: %v\n", *schemaFile, err)
			return 2
		}
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	if schema == nil || *desc == "" {
		got, err := client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: *target})
		if err != nil {
			return f.fail(stdout, stderr, err)
		}
		if schema == nil {
			schema = withoutProperties(got.GetTool().GetInputSchema(), append(slices.Clone(fixed.keys), inject.keys...))
		}
		if *desc == "" {
			*desc = got.GetTool().GetDescription()
		}
	}
	resp, err := client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{ExpectedRevision: expected.v, Tool: &gatewayv1.Tool{
		Name: pos[0], Description: *desc, InputSchema: schema, Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_Alias{Alias: spec}}}})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		raw, err := protoJSON(resp)
		if err != nil {
			fmt.Fprintf(stderr, "error: encoding %s: %v\n", resp.GetTool().GetName(), err)
			return exitCall
		}
		fmt.Fprintln(stdout, string(raw))
		return 0
	}
	verb := "updated"
	if resp.GetCreated() {
		verb = "created"
	}
	fmt.Fprintf(stdout, "%s %s (revision %d), an alias of %s\n", verb, resp.GetTool().GetName(), resp.GetTool().GetRevision(), *target)
	for _, l := range resp.GetLintFindings() {
		fmt.Fprintf(stdout, "  lint: %s\n", lintLine(l))
	}
	return 0
}

// withoutProperties is schema less the named properties (in properties
// and required): what the model of an alias sees of its target.
func withoutProperties(schema *structpb.Struct, names []string) *structpb.Struct {
	m := schema.AsMap()
	if props, ok := m["properties"].(map[string]any); ok {
		for _, n := range names {
			delete(props, n)
		}
	}
	if req, ok := m["required"].([]any); ok {
		m["required"] = slices.DeleteFunc(req, func(v any) bool { s, _ := v.(string); return slices.Contains(names, s) })
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return schema // AsMap's output always converts back
	}
	return s
}
