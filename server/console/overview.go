package console

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/policyreload"
)

// overviewData is the overview page: health, then the policy in force.
type overviewData struct {
	Status     observe.Status
	Health     []toolHealth
	MoreTools  int
	Upstreams  []observe.UpstreamHealth
	PolicyHash string
	Reloads    []policyreload.Event
	Shadow     []shadowCount
	Pending    int
}

// toolHealth is one tool's backend health row.
type toolHealth struct {
	Name, Kind, Backend string
	Balanced            bool
	EjectionsTotal      uint64
	Ejected             int
	LastError           string
	LastErrorAt         time.Time
}

type shadowCount struct {
	Tool, Reason string
	Count        float64
}

func (c *Console) overview(w http.ResponseWriter, _ *http.Request, ses session) {
	st := c.cfg.Status()
	d := overviewData{Status: st, MoreTools: st.MoreTools, PolicyHash: c.cfg.PolicyHash(), Reloads: c.cfg.ReloadHistory(), Pending: st.PendingChanges}
	for _, t := range st.Tools {
		h := toolHealth{Name: t.Name, Kind: t.Kind, Backend: t.Backend, LastError: t.LastError, LastErrorAt: t.LastErrorAt}
		if e, ok := c.cfg.Registry.Lookup(t.Name); ok && c.cfg.Ejections != nil {
			h.EjectionsTotal, h.Ejected, h.Balanced = c.cfg.Ejections(&e.Tool)
		}
		d.Health = append(d.Health, h)
	}
	if c.cfg.Upstreams != nil {
		d.Upstreams = c.cfg.Upstreams()
	}
	if c.cfg.ShadowDenials != nil {
		for _, s := range c.cfg.ShadowDenials() {
			d.Shadow = append(d.Shadow, shadowCount{Tool: s.Labels["tool"], Reason: s.Labels["reason"], Count: s.Value})
		}
		slices.SortFunc(d.Shadow, func(a, b shadowCount) int {
			return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Reason, b.Reason))
		})
	}
	c.render(w, http.StatusOK, pages.overview, ses.view("Overview", "overview", d))
}
