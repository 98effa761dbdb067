package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// Repair analytics (ToolRegistryService.GetRepairStats): what the gateway
// had to repair in each tool's arguments and what failed validation, by
// field, caller and client, with the schema changes a persistent pattern
// suggests.

func toolsStats(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("stats", "stats [TOOL] [--top N] [--addr HOST:PORT]", stderr, 30*time.Second)
	top := f.fs.Int("top", 20, "rows shown per tool, most calls first (0: all)")
	// One optional TOOL, before or after the flags.
	var pos []string
	for rest := args; ; rest = f.fs.Args()[1:] {
		if err := f.fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if f.fs.NArg() == 0 {
			break
		}
		pos = append(pos, f.fs.Arg(0))
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "%s: want at most one TOOL, got %d arguments\n", f.fs.Name(), len(pos))
		f.fs.Usage()
		return 2
	}
	if *f.timeout < 0 {
		fmt.Fprintf(stderr, "%s: --timeout must not be negative, got %v\n", f.fs.Name(), *f.timeout)
		return 2
	}
	if *top < 0 {
		fmt.Fprintf(stderr, "%s: --top must not be negative, got %d\n", f.fs.Name(), *top)
		return 2
	}
	req := &gatewayv1.GetRepairStatsRequest{}
	if len(pos) == 1 {
		req.Tool = pos[0]
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := client.GetRepairStats(ctx, req)
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		b, err := protoNames.Marshal(resp)
		if err != nil {
			fmt.Fprintf(stderr, "error: encoding the stats: %v\n", err)
			return exitCall
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	writeStats(stdout, resp, *top)
	return 0
}

// writeStats prints the analytics for a person: per tool its calls, its
// rows and its suggestions, then what the caps folded into _other.
func writeStats(w io.Writer, resp *gatewayv1.GetRepairStatsResponse, top int) {
	fmt.Fprintf(w, "repair analytics of one replica since %s\n", resp.GetSince().AsTime().UTC().Format(time.RFC3339))
	if len(resp.GetTools()) == 0 {
		fmt.Fprintln(w, "no calls counted yet")
	}
	for _, t := range resp.GetTools() {
		fmt.Fprintf(w, "\n%s: %d calls, %d failed validation", t.GetTool(), t.GetCalls(), t.GetFailedCalls())
		if t.GetSince() != nil {
			fmt.Fprintf(w, " since %s", t.GetSince().AsTime().UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(w)
		rows := t.GetRows()
		if len(rows) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  FIELD\tEVENT\tCALLER\tCLIENT\tCALLS")
			shown := rows
			if top > 0 && len(shown) > top {
				shown = shown[:top]
			}
			for _, r := range shown {
				field := r.GetField()
				if field == "" {
					field = "(arguments)"
				}
				fmt.Fprintf(tw, "  %s\t%s:%s\t%s\t%s\t%d\n", field, r.GetEventKind(), r.GetEvent(), r.GetCaller(), r.GetClient(), r.GetCalls())
			}
			tw.Flush()
			if len(shown) < len(rows) {
				fmt.Fprintf(w, "  … %d more rows (--top 0 shows all)\n", len(rows)-len(shown))
			}
		}
		for _, s := range t.GetSuggestions() {
			fmt.Fprintf(w, "  suggest (%s): %s\n", s.GetChange(), s.GetText())
		}
	}
	if o := resp.GetOverflow(); len(o) > 0 {
		var parts []string
		for _, d := range slices.Sorted(maps.Keys(o)) {
			if o[d] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", d, o[d]))
			}
		}
		if len(parts) > 0 {
			l := resp.GetLimits()
			fmt.Fprintf(w, "\ncounted under _other (caps: %d tools, %d fields a tool, %d callers, %d clients, %d rows): %s\n",
				l.GetMaxTools(), l.GetMaxFieldsPerTool(), l.GetMaxCallers(), l.GetMaxClients(), l.GetMaxRows(), strings.Join(parts, ", "))
		}
	}
}
