package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/flowdrop/gateway/internal/openapiimport"
	"github.com/flowdrop/gateway/registry"
)

const importOpenAPIUsage = "import openapi --spec FILE|URL --base-url URL [--operation ID] [--prefix P] [--dry-run] [--require-compatible] [--replace] [--addr HOST:PORT]"

// maxSpecSize bounds an OpenAPI document read from a file or URL.
const maxSpecSize = 16 << 20

// toolsImportOpenAPI registers one HTTP-operation tool per operation of
// an OpenAPI 3 document (Swagger 2.0 converted).
func toolsImportOpenAPI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("import openapi", importOpenAPIUsage, stderr, 30*time.Second)
	f.imp = addImportFlags(f.fs)
	spec := f.fs.String("spec", "", "the OpenAPI 3 or Swagger 2.0 document (JSON or YAML): a file, or an http(s) URL")
	baseURL := f.fs.String("base-url", "", "the API's base URL (http:// or https://), stored in each tool")
	operation := f.fs.String("operation", "", "import only the operation with this operationId")
	prefix := f.fs.String("prefix", "", "start every tool name with P")
	dryRun := f.fs.Bool("dry-run", false, "print the tools as JSON instead of registering them")
	requireCompat := f.fs.Bool("require-compatible", false, "refuse re-importing an operation whose input schema changed incompatibly")
	replace := f.fs.Bool("replace", false, "replace a tool of the same name that is not an HTTP-operation tool of this --base-url")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if code == exitCall && f.out.json {
			writeJSON(stdout, map[string]any{"error": &callError{Code: "Unknown", Message: msg}})
		}
		fmt.Fprintln(stderr, "flowdropctl tools import openapi: "+msg)
		return code
	}
	if *spec == "" {
		return fail(2, "--spec is required: an OpenAPI document's file or URL")
	}
	if r := registry.ValidateBaseURL(*baseURL); r != "" {
		return fail(2, "--base-url %s", r)
	}
	if *f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *f.timeout)
		defer cancel()
	}
	data, err := readSpec(ctx, *spec)
	if err != nil {
		return fail(2, "--spec %s: %v", *spec, err)
	}
	doc, err := openapiimport.Load(ctx, data)
	if err != nil {
		return fail(2, "--spec %s: %v", *spec, err)
	}
	tools, skipped, err := openapiimport.Tools(doc, openapiimport.Options{BaseURL: *baseURL, Operation: *operation, Prefix: *prefix})
	if err != nil {
		return fail(2, "%v", err)
	}
	skips := []importSkip{}
	for _, s := range skipped {
		skips = append(skips, importSkip{s.Operation, s.Reason})
	}
	reportSkips(stderr, skips)
	if len(tools) == 0 {
		return fail(1, "no operation to import")
	}
	var guard importGuard
	if !*replace {
		guard = backendImportGuard(sameBaseURL(*baseURL))
	}
	return registerImported(ctx, f, tools, skips, *dryRun, *requireCompat, guard, stdout, stderr)
}

// readSpec reads the document from a file or an http(s) URL, bounded.
func readSpec(ctx context.Context, spec string) ([]byte, error) {
	var r io.Reader
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, spec, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		r = resp.Body
	} else {
		file, err := os.Open(spec)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		r = file
	}
	data, err := io.ReadAll(io.LimitReader(r, maxSpecSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSpecSize {
		return nil, fmt.Errorf("over %d bytes", maxSpecSize)
	}
	return data, nil
}
