package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// toolsSearch implements `flowdropctl tools search QUERY`: the tools the
// caller may invoke ranked against QUERY (ToolRegistryService/SearchTools,
// the MCP face's discovery search), best first. With --output json stdout
// is {"hits": [{"name", "description", "score"}]}.
func toolsSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("search", `search QUERY [--limit N] [--addr HOST:PORT]  (quote a query of several words)`, stderr, 30*time.Second)
	limit := f.fs.Int("limit", 10, "at most this many tools (1..100)")
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	if *limit < 1 || *limit > 100 {
		fmt.Fprintf(stderr, "flowdropctl tools search: --limit must be 1..100, got %d\n", *limit)
		return 2
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := client.SearchTools(ctx, &gatewayv1.SearchToolsRequest{Query: pos[0], Limit: int32(*limit)})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		type hit struct {
			Name        string  `json:"name"`
			Description string  `json:"description"`
			Score       float64 `json:"score"`
		}
		out := struct {
			Hits []hit `json:"hits"`
		}{Hits: []hit{}}
		for _, h := range resp.GetHits() {
			out.Hits = append(out.Hits, hit{Name: h.GetName(), Description: h.GetDescription(), Score: h.GetScore()})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	if len(resp.GetHits()) == 0 {
		fmt.Fprintln(stderr, "no tool matches")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCORE\tDESCRIPTION")
	for _, h := range resp.GetHits() {
		fmt.Fprintf(tw, "%s\t%.2f\t%s\n", h.GetName(), h.GetScore(), h.GetDescription())
	}
	tw.Flush()
	return 0
}
