package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/toolproto"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const importUsage = "import grpc --target HOST:PORT [--protoset FILE] [--service NAME] [--method NAME] [--prefix P] [--dry-run] [--require-compatible] [--replace] [--addr HOST:PORT]"

// toolsImport dispatches `flowdropctl tools import <kind>`.
func toolsImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "grpc":
		return toolsImportGRPC(ctx, args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "openapi":
		return toolsImportOpenAPI(ctx, args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "mcp":
		return toolsImportMCP(ctx, args[1:], stdout, stderr)
	}
	usage := "usage: flowdropctl tools " + importUsage + "\n       flowdropctl tools " + importOpenAPIUsage + "\n       flowdropctl tools " + importMCPUsage
	if asksHelp(args) {
		fmt.Fprintln(stdout, usage)
		return exitOK
	}
	fmt.Fprintln(stderr, usage)
	return 2
}

// toolsImportGRPC registers one gRPC-method tool per unary method of a
// service, its descriptors from server reflection or --protoset.
func toolsImportGRPC(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("import grpc", importUsage, stderr, 30*time.Second)
	f.imp = addImportFlags(f.fs)
	target := f.fs.String("target", "", "the service's gRPC dial target (HOST:PORT or a gRPC target), stored in each tool")
	protoset := f.fs.String("protoset", "", "descriptor set file (buf build -o, protoc --include_imports --descriptor_set_out) instead of server reflection")
	service := f.fs.String("service", "", "import only this service (full or unqualified name)")
	method := f.fs.String("method", "", "import only this method (its name)")
	prefix := f.fs.String("prefix", "", "start every tool name with P")
	dryRun := f.fs.Bool("dry-run", false, "print the tools as JSON instead of registering them")
	requireCompat := f.fs.Bool("require-compatible", false, "refuse re-importing a method whose request changed incompatibly")
	replace := f.fs.Bool("replace", false, "replace a tool of the same name that is not a gRPC-method tool of this --target")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if code == exitCall && f.out.json {
			writeJSON(stdout, map[string]any{"error": &callError{Code: "Unknown", Message: msg}})
		}
		fmt.Fprintln(stderr, "flowdropctl tools import grpc: "+msg)
		return code
	}
	if r := registry.ValidateBackend(*target); r != "" {
		return fail(2, "--target: %s", r)
	}
	if *f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *f.timeout)
		defer cancel()
	}
	var src *grpcimport.Source
	if *protoset != "" {
		b, err := os.ReadFile(*protoset)
		if err != nil {
			return fail(2, "--protoset: %v", err)
		}
		if src, err = grpcimport.FromDescriptorSet(b); err != nil {
			return fail(2, "--protoset %s: %v", *protoset, err)
		}
	} else {
		// Reflection is read from the service itself, in plaintext as the
		// gateway's backend connections are.
		cc, err := grpc.NewClient(*target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return fail(2, "--target: %v", err)
		}
		src, err = grpcimport.FromReflection(ctx, cc)
		cc.Close()
		if err != nil {
			return fail(1, "%s: %v", *target, err)
		}
	}
	tools, skipped, err := grpcimport.Tools(src, grpcimport.Options{Target: *target, Service: *service, Method: *method, Prefix: *prefix})
	if err != nil {
		return fail(2, "%v", err)
	}
	skips := []importSkip{}
	for _, s := range skipped {
		skips = append(skips, importSkip{string(s.Method), s.Reason})
	}
	reportSkips(stderr, skips)
	if len(tools) == 0 {
		return fail(1, "no method to import")
	}
	var guard importGuard
	if !*replace {
		guard = backendImportGuard(sameGRPCTarget(*target))
	}
	return registerImported(ctx, f, tools, skips, *dryRun, *requireCompat, guard, stdout, stderr)
}

// importSkip is what an import left out, and why (method or operation).
type importSkip struct {
	Method string `json:"method"`
	Reason string `json:"reason"`
}

func reportSkips(stderr io.Writer, skips []importSkip) {
	for _, s := range skips {
		fmt.Fprintf(stderr, "skipped %s: %s\n", s.Method, s.Reason)
	}
}

// importGuard says whether an import may write t: the revision to write
// it at (nil: any), or an error refusing it.
type importGuard func(ctx context.Context, client gatewayv1.ToolRegistryServiceClient, t *gatewayv1.Tool) (*int64, error)

// registerImported sets the import flags' TLS and annotations on the
// tools, then prints them as JSON (dryRun) or registers them in
// order, each as guard allows (nil: any), stopping at the first refusal;
// skips (already reported on stderr) is what --output json lists as
// skipped.
func registerImported(ctx context.Context, f *toolsFlags, tools []*gatewayv1.Tool, skips any, dryRun, requireCompat bool, guard importGuard, stdout, stderr io.Writer) int {
	if f.imp != nil {
		f.imp.edit(tools)
	}
	if dryRun {
		return printToolsJSON(stdout, stderr, tools)
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	registered := []string{}
	for i, t := range tools {
		var expected *int64
		var err error
		if guard != nil {
			expected, err = guard(ctx, client, t)
		}
		if err == nil {
			_, err = client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: t, RequireCompatible: requireCompat, ExpectedRevision: expected})
		}
		if err != nil && f.out.json {
			writeJSON(stdout, map[string]any{"registered": registered, "skipped": skips, "error": newCallError(err),
				"failed": t.GetName(), "not_sent": len(tools) - i - 1})
			return exitCall
		}
		if err != nil {
			fmt.Fprintf(stderr, "tool %s:\n", t.GetName())
			printToolsStatus(stderr, err)
			if left := len(tools) - i - 1; left > 0 {
				fmt.Fprintf(stderr, "stopped: %d later tool(s) were not registered\n", left)
			}
			return 1
		}
		if f.out.json {
			registered = append(registered, t.GetName())
			continue
		}
		fmt.Fprintln(stdout, t.GetName())
	}
	if f.out.json {
		writeJSON(stdout, map[string]any{"registered": registered, "skipped": skips})
	}
	return 0
}

// printToolsJSON prints {"tools": [...]} with the tools file's field names.
func printToolsJSON(stdout, stderr io.Writer, tools []*gatewayv1.Tool) int {
	out := &gatewayv1.ListToolsResponse{Tools: tools}
	b, err := protoNames.Marshal(out)
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl tools import: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(b))
	return 0
}

// toolBackend is how list and watch show a tool's backend, as its kind
// says (registry.BackendLine): the ToolBackendService target, a gRPC
// method's target and method name, an HTTP operation, an upstream MCP tool.
func toolBackend(t *gatewayv1.Tool) string {
	rt := registry.Tool{Backend: t.GetBackend(), Spec: toolproto.SpecFromProto(t.GetSpec())}
	return registry.BackendLine(&rt)
}
