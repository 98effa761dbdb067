package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry/export"
)

// toolsExport implements `flowdropctl tools export --format F`: the tools
// the caller may invoke, in a model API's tool-definition format. stdout
// is the provider's document as it is (hand it to the API); tools the
// format cannot carry are listed on stderr, and so (openai-strict) are the
// tools whose optional properties the export made nullable while the
// gateway refuses such nulls (its normalize.optional_nulls is not drop for
// them). With --output json stdout is {"tools": document, "left_out":
// [{"name", "findings"}], "optional_nulls_refused": [names]}.
func toolsExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("export", "export --format openai|openai-strict|anthropic|gemini|mcp [--bundle B] [--addr HOST:PORT]", stderr, 30*time.Second)
	format := f.fs.String("format", "", "the tool-definition format: "+export.FormatNames())
	bundle := f.fs.String("bundle", "", "only the tools of bundle B")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	if _, ok := export.ParseFormat(*format); !ok {
		fmt.Fprintf(stderr, "flowdropctl tools export: --format must be %s, got %q\n", export.FormatNames(), *format)
		return 2
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	// Paged, so a registry of any size fits the client's receive limit;
	// the pages are joined into the one document the API takes.
	var (
		pages []json.RawMessage
		left  []*gatewayv1.LeftOutTool
		// refused: tools the gateway would refuse the export's nulls for.
		refused = []string{}
		token   string
	)
	for range maxExportPages {
		resp, err := client.ExportTools(ctx, &gatewayv1.ExportToolsRequest{Format: *format, PageSize: exportPageSize, PageToken: token, Bundle: *bundle})
		if err != nil {
			return f.fail(stdout, stderr, err)
		}
		pages = append(pages, json.RawMessage(resp.GetToolsJson()))
		left = append(left, resp.GetLeftOut()...)
		refused = append(refused, resp.GetOptionalNullsRefused()...)
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if token != "" {
		fmt.Fprintf(stderr, "error: the gateway's export did not end within %d pages\n", maxExportPages)
		return exitCall
	}
	joined, err := export.Join(export.Format(*format), pages)
	if err != nil {
		fmt.Fprintf(stderr, "error: the gateway's %s document is not JSON: %v\n", *format, err)
		return exitCall
	}
	var doc bytes.Buffer
	if err := json.Indent(&doc, joined, "", "  "); err != nil {
		fmt.Fprintf(stderr, "error: the gateway's %s document is not JSON: %v\n", *format, err)
		return exitCall
	}
	if f.out.json {
		type leftOut struct {
			Name     string   `json:"name"`
			Findings []string `json:"findings"`
		}
		out := struct {
			Tools                json.RawMessage `json:"tools"`
			LeftOut              []leftOut       `json:"left_out"`
			OptionalNullsRefused []string        `json:"optional_nulls_refused"`
		}{Tools: joined, LeftOut: []leftOut{}, OptionalNullsRefused: refused}
		for _, l := range left {
			lo := leftOut{Name: l.GetName(), Findings: []string{}}
			for _, fd := range l.GetFindings() {
				lo.Findings = append(lo.Findings, findingLine(fd))
			}
			out.LeftOut = append(out.LeftOut, lo)
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintln(stdout, doc.String())
	for _, l := range left {
		fmt.Fprintf(stderr, "left out %s (%s cannot carry it):\n", l.GetName(), *format)
		for _, fd := range l.GetFindings() {
			fmt.Fprintf(stderr, "  %s\n", findingLine(fd))
		}
	}
	if len(refused) > 0 {
		fmt.Fprintf(stderr, "warning: this export makes optional properties nullable, so the model sends null for one not given; "+
			"the gateway refuses such calls to %s (set normalize.optional_nulls: drop in its policy to accept them)\n", someNames(refused, 10))
	}
	return 0
}

// someNames is names joined with ", ", the first limit of them and how many
// more: one readable line whatever the registry's size.
func someNames(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

// exportPageSize is the tools per ExportTools page: a page of large
// schemas still fits gRPC's default 4 MiB receive limit. maxExportPages
// bounds the loop (a million tools).
const (
	exportPageSize = 200
	maxExportPages = 5000
)

// findingLine is a lint finding as one line: "PATH MESSAGE".
func findingLine(f *gatewayv1.LintFinding) string {
	p := f.GetPath()
	if p == "" {
		p = "(root)"
	}
	return p + " " + f.GetMessage()
}
