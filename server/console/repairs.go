package console

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/repairstats"
)

// repairsData is the repair analytics page: per tool the counts of each
// repair and validation failure by field, caller and client, and the
// schema changes a persistent pattern suggests. It holds no argument
// value: fields are schema paths (array indices folded to *), events are
// repair kinds and validation keywords.
type repairsData struct {
	Since       time.Time
	Tool        string // the one tool shown ("" for every tool)
	Tools       []repairTool
	MoreTools   int
	Overflow    []overflowCount
	Thresholds  repairstats.Thresholds
	RepairShare float64 // percentages of the thresholds' shares
	KeywordPct  float64
}

type repairTool struct {
	repairstats.Tool
	MoreRows int
}

type overflowCount struct {
	Dimension string
	Count     uint64
}

// Bounds on what one page lists: the analytics are already bounded
// (repairstats.Limits), these keep a page readable.
const (
	maxRepairToolsShown = 200
	maxRepairRowsShown  = 100
)

func (c *Console) repairs(w http.ResponseWriter, r *http.Request, ses session) {
	if c.cfg.RepairStats == nil {
		c.fail(w, r, &ses, http.StatusNotFound, "this gateway keeps no repair analytics")
		return
	}
	tool := r.URL.Query().Get("tool")
	if tool != "" && registry.ValidateName(tool) != nil {
		c.fail(w, r, &ses, http.StatusBadRequest, "the tool filter is not a tool name: must match "+registry.NamePattern)
		return
	}
	snap := c.cfg.RepairStats(tool)
	d := repairsData{Since: snap.Since, Tool: tool, Thresholds: snap.Thresholds,
		RepairShare: 100 * snap.Thresholds.RepairShare, KeywordPct: 100 * snap.Thresholds.KeywordShare}
	for dim, n := range snap.Overflow {
		if n > 0 {
			d.Overflow = append(d.Overflow, overflowCount{dim, n})
		}
	}
	slices.SortFunc(d.Overflow, func(a, b overflowCount) int { return cmp.Compare(a.Dimension, b.Dimension) })
	for _, t := range snap.Tools {
		if len(d.Tools) == maxRepairToolsShown {
			d.MoreTools = len(snap.Tools) - maxRepairToolsShown
			break
		}
		rt := repairTool{Tool: t}
		if len(rt.Rows) > maxRepairRowsShown {
			rt.MoreRows, rt.Rows = len(rt.Rows)-maxRepairRowsShown, rt.Rows[:maxRepairRowsShown]
		}
		d.Tools = append(d.Tools, rt)
	}
	title := "Repair analytics"
	if tool != "" {
		title += " of " + tool
	}
	c.render(w, http.StatusOK, pages.repairs, ses.view(title, "repairs", d))
}
