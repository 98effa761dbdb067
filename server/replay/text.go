package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person: the counts, then one block per
// changed decision.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "replayed %d of %d tool calls (%d audit lines): %d unchanged (%d refused for another reason or rule), %d allowed → refused (%d by the schema), %d refused → allowed\n",
		r.Replayed, r.Calls, r.Lines, r.Unchanged, r.ReasonChanged, r.AllowedToRefused, r.SchemaRefused, r.RefusedToAllowed)
	if n := total(r.NotReplayable); n > 0 {
		fmt.Fprintf(bw, "not replayable: %d (%s)\n", n, counts(r.NotReplayable))
	}
	if n := total(r.Skipped); n > 0 {
		fmt.Fprintf(bw, "skipped: %d lines (%s)\n", n, counts(r.Skipped))
	}
	for _, c := range r.Changes {
		fmt.Fprintf(bw, "\nline %d  %s  tool %q  caller %q", c.Line, c.Time.UTC().Format(time.RFC3339Nano), c.Tool, c.CallerSubject)
		if c.CallID != "" {
			fmt.Fprintf(bw, "  call %q", c.CallID)
		}
		fmt.Fprintf(bw, "\n  %s: was %s, now %s\n", c.Kind, c.Was.short(), c.Now.short())
		if c.Now.Message != "" {
			fmt.Fprintf(bw, "  %s\n", c.Now.Message)
		}
		for _, v := range c.Now.Violations {
			fmt.Fprintf(bw, "    %s\n", v)
		}
	}
	if r.ChangesOmitted > 0 {
		fmt.Fprintf(bw, "\n… and %d more changes not listed\n", r.ChangesOmitted)
	}
	return bw.Flush()
}

func (o Outcome) short() string {
	s := o.Decision
	if o.Reason != "" {
		s += " (" + o.Reason
		if o.Rule != "" {
			s += fmt.Sprintf(", rule %q", o.Rule)
		}
		s += ")"
	}
	return s
}

func total(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// counts is "a 2, b 1", by key.
func counts(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
