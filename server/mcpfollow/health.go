package mcpfollow

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

// UpstreamHealth is the follower's view of one upstream it follows: the
// outcome of its last listing. Upstream is the URL as a dashboard may show
// it (upstreamLabel: no user info, query or fragment); an operator's page
// shows it, a viewer's must not.
type UpstreamHealth struct {
	Upstream string
	// Tools are the imported tools followed from it, by registry name
	// (sorted; a viewer's page names them instead of the address).
	Tools []string
	// Pending counts those with a change held for an admin.
	Pending int
	// Listed is when a listing last succeeded (zero: not yet).
	Listed time.Time
	// LastError and LastErrorAt are the last failed listing's, when it
	// came after the last success ("" when none did). The text has the
	// upstream's raw URL replaced by Upstream, and is bounded.
	LastError   string
	LastErrorAt time.Time
	// NotRunning: a stdio server the gateway runs only for calls is not
	// running now, so it was not listed (not a failure).
	NotRunning bool
}

// maxHealthError bounds a listing error's text kept for the console.
const maxHealthError = 300

// listing is one upstream's last outcomes, by raw URL.
type listing struct {
	listed     time.Time
	lastErr    string
	lastErrAt  time.Time
	notRunning bool
	errAfterOK bool
}

// healthBook keeps the outcome of each upstream's listings.
type healthBook struct {
	mu sync.Mutex
	by map[string]*listing // by raw URL
}

func (b *healthBook) record(url string, now time.Time, err error, notRunning bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]*listing{}
	}
	l := b.by[url]
	if l == nil {
		l = &listing{}
		b.by[url] = l
	}
	l.notRunning = notRunning
	switch {
	case notRunning:
	case err != nil:
		text := strings.ReplaceAll(err.Error(), url, upstreamLabel(url))
		l.lastErr, l.lastErrAt, l.errAfterOK = policy.BoundTo(text, maxHealthError), now, true
	default:
		l.listed, l.errAfterOK = now, false
	}
}

// forget drops the upstreams no tool is imported from any more.
func (b *healthBook) forget(keep map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for url := range b.by {
		if !keep[url] {
			delete(b.by, url)
		}
	}
}

// Health is every upstream the registry's imported tools come from, with
// the outcome of its last listing, sorted by Upstream. An upstream not
// listed yet has a zero Listed and no error.
func (f *Follower) Health() []UpstreamHealth {
	byURL := map[string]*UpstreamHealth{}
	for _, e := range f.reg.Snapshot().List() {
		t := e.Tool
		if t.Spec == nil || t.Spec.MCPTool == nil || !t.ImportedFrom(t.Spec.MCPTool.URL) {
			continue
		}
		u := t.Spec.MCPTool.URL
		h := byURL[u]
		if h == nil {
			h = &UpstreamHealth{Upstream: upstreamLabel(u)}
			byURL[u] = h
		}
		h.Tools = append(h.Tools, t.Name)
		if t.Pending != nil {
			h.Pending++
		}
	}
	f.health.mu.Lock()
	for u, h := range byURL {
		if l := f.health.by[u]; l != nil {
			h.Listed, h.NotRunning = l.listed, l.notRunning
			if l.errAfterOK {
				h.LastError, h.LastErrorAt = l.lastErr, l.lastErrAt
			}
		}
	}
	f.health.mu.Unlock()
	out := make([]UpstreamHealth, 0, len(byURL))
	for _, h := range byURL {
		slices.Sort(h.Tools)
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b UpstreamHealth) int { return cmp.Compare(a.Upstream, b.Upstream) })
	return out
}
