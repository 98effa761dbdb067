package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// toolsHistory prints a tool's kept definitions
// (ToolRegistryService.GetToolHistory), newest first: a table for a
// person, the definitions themselves with --json.
func toolsHistory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("history", "history NAME [--limit N] [--addr HOST:PORT]", stderr, 30*time.Second)
	limit := f.fs.Int("limit", 0, "at most N definitions, newest first (0: every one kept, at most 20)")
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	if *limit < 0 || *limit > 20 {
		fmt.Fprintf(stderr, "%s: --limit must be between 0 and 20, got %d\n", f.fs.Name(), *limit)
		return 2
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := client.GetToolHistory(ctx, &gatewayv1.GetToolHistoryRequest{Name: pos[0], Limit: int32(*limit)})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		b, err := protoNames.Marshal(resp)
		if err != nil {
			fmt.Fprintf(stderr, "error: encoding the history: %v\n", err)
			return exitCall
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	if len(resp.GetRevisions()) == 0 {
		fmt.Fprintf(stdout, "no revision of %s kept\n", pos[0])
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tTIME\tWRITER\tDESCRIPTION")
	for _, r := range resp.GetRevisions() {
		writer := r.GetWriter()
		if writer == "" {
			writer = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.GetRevision(), r.GetTime().AsTime().UTC().Format(time.RFC3339), printable(writer), printable(firstLine(r.GetTool().GetDescription())))
	}
	_ = tw.Flush()
	return 0
}

// printable is s with every control character (a terminal escape, a tab
// that would break the table) as "?": a writer's subject comes from a
// credential, a description from a registrant.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
