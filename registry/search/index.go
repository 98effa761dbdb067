package search

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/flowdrop/gateway/registry"
)

// BM25 parameters: the usual ones. k1 bounds how much a repeated term
// counts; b is how much a long description is discounted.
const (
	k1 = 1.2
	b  = 0.75
)

// Result counts a query may ask for.
const (
	DefaultLimit = 10
	MaxLimit     = 100
)

// Hit is one ranked tool: the registry entry as of the snapshot the index
// reflects, and its BM25 score (higher is better; only comparable within
// one query).
type Hit struct {
	Entry *registry.Entry
	Score float64
}

// QueryError is a query or limit the index refuses; Field is "query" or
// "limit". The faces map it once each (gRPC InvalidArgument, an MCP tool
// error).
type QueryError struct {
	Field  string
	Reason string
}

func (e *QueryError) Error() string { return e.Field + " " + e.Reason }

type posting struct {
	doc uint32
	tf  float32 // weighted term frequency (fields.go)
}

type term struct {
	df   int32 // live documents holding the term
	post []posting
}

// doc is one indexed tool; terms is nil once it is removed (its postings
// stay until the next compaction and are skipped).
type doc struct {
	entry  *registry.Entry
	length float32
	terms  []uint32
}

// Index is a BM25 index over a registry's tools. Queries share a read
// lock; keeping the index current takes the write lock for the changed
// tools only. It indexes nothing until the first query (a gateway whose
// callers never search pays no memory for it), and from then on follows
// the registry's changes in the background; a query also catches up with
// the snapshot first, so what it ranks is never older than the registry
// snapshot at the time it began.
type Index struct {
	reg *registry.Registry

	mu      sync.RWMutex
	snap    *registry.Snapshot // the snapshot indexed; nil: not yet
	list    []*registry.Entry  // snap's entries, by name
	termIDs map[string]uint32
	terms   []term
	docs    []doc
	lens    []float32 // docs' lengths, apart for the scoring loop's cache; -1: removed
	byName  map[string]uint32
	live    int
	dead    int
	total   float64 // the live documents' summed length

	used    atomic.Bool
	scratch sync.Pool
	stop    func()
	done    chan struct{}
}

// New returns an index over reg that follows it until Close.
func New(reg *registry.Registry) *Index {
	x := &Index{reg: reg, termIDs: map[string]uint32{}, byName: map[string]uint32{}, done: make(chan struct{})}
	changes, stop := reg.Changes()
	x.stop = stop
	go x.follow(changes)
	return x
}

// Close stops following the registry and waits for the follower.
func (x *Index) Close() {
	x.stop()
	<-x.done
}

func (x *Index) follow(changes <-chan struct{}) {
	defer close(x.done)
	for range changes {
		if x.used.Load() {
			x.Sync()
		}
	}
}

// Sync brings the index up to the registry's current snapshot: the tools
// whose entry changed are removed and re-added, nothing else is touched.
func (x *Index) Sync() {
	s := x.reg.Snapshot()
	x.mu.RLock()
	same := x.snap == s
	x.mu.RUnlock()
	if same {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s = x.reg.Snapshot()
	if x.snap == s {
		return
	}
	next := s.List()
	old := x.list
	i, j := 0, 0
	for i < len(old) || j < len(next) {
		switch {
		case i < len(old) && j < len(next) && old[i] == next[j]:
			i++
			j++
		case j == len(next) || (i < len(old) && old[i].Tool.Name < next[j].Tool.Name):
			x.removeLocked(old[i].Tool.Name)
			i++
		case i == len(old) || next[j].Tool.Name < old[i].Tool.Name:
			x.addLocked(next[j])
			j++
		default: // same name, another entry: a new revision
			x.removeLocked(old[i].Tool.Name)
			x.addLocked(next[j])
			i++
			j++
		}
	}
	x.list, x.snap = next, s
	if x.dead >= max(256, x.live/2) {
		x.compactLocked()
	}
}

func (x *Index) addLocked(e *registry.Entry) {
	tf, length := docTerms(&e.Tool)
	id := uint32(len(x.docs))
	ids := make([]uint32, 0, len(tf))
	for t, f := range tf {
		tid, ok := x.termIDs[t]
		if !ok {
			tid = uint32(len(x.terms))
			x.termIDs[t] = tid
			x.terms = append(x.terms, term{})
		}
		x.terms[tid].df++
		x.terms[tid].post = append(x.terms[tid].post, posting{doc: id, tf: f})
		ids = append(ids, tid)
	}
	x.docs = append(x.docs, doc{entry: e, length: length, terms: ids})
	x.lens = append(x.lens, length)
	x.byName[e.Tool.Name] = id
	x.live++
	x.total += float64(length)
}

func (x *Index) removeLocked(name string) {
	id, ok := x.byName[name]
	if !ok {
		return
	}
	delete(x.byName, name)
	d := &x.docs[id]
	for _, tid := range d.terms {
		x.terms[tid].df--
	}
	x.total -= float64(d.length)
	d.terms, d.entry = nil, nil
	x.lens[id] = -1
	x.live--
	x.dead++
}

// compactLocked drops the removed documents' postings and the terms no
// live document holds, renumbering both: amortized over the removals
// that made it due, a constant cost per removal.
func (x *Index) compactLocked() {
	docMap := make([]uint32, len(x.docs))
	docs := make([]doc, 0, x.live)
	lens := make([]float32, 0, x.live)
	for i, d := range x.docs {
		if d.terms == nil {
			docMap[i] = math.MaxUint32
			continue
		}
		docMap[i] = uint32(len(docs))
		x.byName[d.entry.Tool.Name] = uint32(len(docs))
		docs = append(docs, d)
		lens = append(lens, d.length)
	}
	termMap := make([]uint32, len(x.terms))
	terms := make([]term, 0, len(x.terms))
	ids := make(map[string]uint32, len(x.termIDs))
	for s, tid := range x.termIDs {
		t := x.terms[tid]
		if t.df == 0 {
			termMap[tid] = math.MaxUint32
			continue
		}
		post := t.post[:0]
		for _, p := range t.post {
			if nd := docMap[p.doc]; nd != math.MaxUint32 {
				post = append(post, posting{doc: nd, tf: p.tf})
			}
		}
		termMap[tid] = uint32(len(terms))
		ids[s] = uint32(len(terms))
		terms = append(terms, term{df: t.df, post: post})
	}
	for i := range docs {
		for k, tid := range docs[i].terms {
			docs[i].terms[k] = termMap[tid]
		}
	}
	x.docs, x.lens, x.terms, x.termIDs, x.dead = docs, lens, terms, ids, 0
}

// scratch is one query's working memory, pooled: a dense score per
// document and the documents touched.
type scratch struct {
	scores  []float32
	touched []uint32
	cands   []cand
}

type cand struct {
	doc   uint32
	score float32
}

// Search ranks the tools matching query and returns the best limit of
// those visible says the caller may see (0: DefaultLimit; above MaxLimit:
// MaxLimit). A tool visible refuses is never returned and takes no place
// in the results. Work is bounded by the query's terms (at most
// MaxQueryTerms) times the tools holding each.
func (x *Index) Search(query string, limit int, visible func(name string) bool) ([]Hit, error) {
	terms, err := queryTerms(query)
	if err != nil {
		return nil, err
	}
	switch {
	case limit < 0:
		return nil, &QueryError{Field: "limit", Reason: fmt.Sprintf("must not be negative, got %d", limit)}
	case limit == 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	x.used.Store(true)
	x.Sync()
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 || len(terms) == 0 {
		return []Hit{}, nil
	}
	sc, _ := x.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer x.scratch.Put(sc)
	if len(sc.scores) < len(x.docs) {
		sc.scores = make([]float32, len(x.docs)+len(x.docs)/8)
	}
	scores, touched := sc.scores, sc.touched[:0]
	n := float64(x.live)
	avg := float32(x.total / n)
	lens := x.lens
	c1, c2 := float32(k1*(1-b)), float32(k1*b)/avg
	for _, t := range terms {
		tid, ok := x.termIDs[t]
		if !ok || x.terms[tid].df == 0 {
			continue
		}
		df := float64(x.terms[tid].df)
		w := float32(math.Log(1+(n-df+0.5)/(df+0.5))) * (k1 + 1)
		for _, p := range x.terms[tid].post {
			l := lens[p.doc]
			if l < 0 {
				continue
			}
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			scores[p.doc] += w * p.tf / (p.tf + c1 + c2*l)
		}
	}
	cands := sc.cands[:0]
	for _, d := range touched {
		cands = append(cands, cand{doc: d, score: scores[d]})
		scores[d] = 0
	}
	sc.touched, sc.cands = touched, cands
	// A heap, popped until limit visible tools: O(candidates) to build,
	// O(log) per tool looked at, and a denied tool costs one pop.
	h := candHeap{c: cands, docs: x.docs}
	h.init()
	hits := make([]Hit, 0, min(limit, len(cands)))
	for len(hits) < limit && len(h.c) > 0 {
		c := h.pop()
		e := x.docs[c.doc].entry
		if visible != nil && !visible(e.Tool.Name) {
			continue
		}
		hits = append(hits, Hit{Entry: e, Score: float64(c.score)})
	}
	return hits, nil
}

// queryTerms are the query's distinct terms, as tools' are made.
func queryTerms(q string) ([]string, error) {
	if len(q) > MaxQueryBytes {
		return nil, &QueryError{Field: "query", Reason: fmt.Sprintf("is %d bytes; at most %d", len(q), MaxQueryBytes)}
	}
	if strings.TrimSpace(q) == "" {
		return nil, &QueryError{Field: "query", Reason: "is required"}
	}
	ts := tokens(nil, q, MaxQueryTerms+1, true)
	if len(ts) > MaxQueryTerms {
		return nil, &QueryError{Field: "query", Reason: fmt.Sprintf("has more than %d terms", MaxQueryTerms)}
	}
	out := ts[:0]
	for i, t := range ts {
		dup := false
		for _, u := range ts[:i] {
			if u == t {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out, nil
}

// candHeap orders candidates best first: higher score, then name, so
// equal scores rank the same way every time.
type candHeap struct {
	c    []cand
	docs []doc
}

func (h *candHeap) less(i, j int) bool {
	a, b := h.c[i], h.c[j]
	if a.score != b.score {
		return a.score > b.score
	}
	return h.docs[a.doc].entry.Tool.Name < h.docs[b.doc].entry.Tool.Name
}

func (h *candHeap) init() {
	for i := len(h.c)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candHeap) pop() cand {
	top := h.c[0]
	last := len(h.c) - 1
	h.c[0] = h.c[last]
	h.c = h.c[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *candHeap) down(i int) {
	n := len(h.c)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.c[i], h.c[m] = h.c[m], h.c[i]
		i = m
	}
}

// Len is the number of tools indexed (0 before the first query).
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// Short is a description cut for a result list: its first sentence or
// line, at most 200 bytes (on a rune boundary, with "…" when cut).
func Short(desc string) string {
	const maxBytes = 200
	s := strings.TrimSpace(desc)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) <= maxBytes {
		return s
	}
	cut := maxBytes
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(c byte) bool { return c&0xC0 != 0x80 }
