// Package pagingtest judges a listing read page by page while names were
// added and deleted on both sides of its cursor: the check the gRPC
// ListTools and the MCP tools/list paging tests share.
package pagingtest

import (
	"slices"
	"testing"
)

// Paged is what a test saw and did while it paged.
type Paged struct {
	// Got is every name listed, in the order listed.
	Got []string
	// Initial is the names registered before paging began.
	Initial []string
	// Visible says whether the caller may see a name.
	Visible func(string) bool
	// Touched are the names changed while paging: judged apart.
	Touched map[string]bool
	// AddedAhead and DeletedAhead are visible names added or deleted
	// ahead of the cursor while paging.
	AddedAhead, DeletedAhead []string
}

// Check fails t unless the pages were in strictly ascending order, listed
// nothing hidden, every untouched visible name exactly once, every name
// added ahead of the cursor once and none deleted ahead of it, and the
// test changed enough ahead of the cursor to have exercised that.
func Check(t testing.TB, p Paged) {
	t.Helper()
	if !slices.IsSorted(p.Got) || len(slices.Compact(slices.Clone(p.Got))) != len(p.Got) {
		t.Fatal("pages are not in strictly ascending name order: a tool came twice or out of order")
	}
	count := map[string]int{}
	for _, name := range p.Got {
		count[name]++
		if !p.Visible(name) {
			t.Errorf("%s is hidden from the caller but was listed", name)
		}
	}
	for _, name := range p.Initial {
		if p.Visible(name) && !p.Touched[name] && count[name] != 1 {
			t.Errorf("%s (visible, not added or deleted) listed %d times, want once", name, count[name])
		}
	}
	for _, name := range p.AddedAhead {
		if count[name] != 1 {
			t.Errorf("%s added ahead of the cursor listed %d times, want once", name, count[name])
		}
	}
	for _, name := range p.DeletedAhead {
		if count[name] != 0 {
			t.Errorf("%s deleted ahead of the cursor was listed", name)
		}
	}
	if len(p.AddedAhead) < 10 || len(p.DeletedAhead) < 10 {
		t.Fatalf("only %d additions and %d deletions ahead of the cursor: the test did not exercise paging under change", len(p.AddedAhead), len(p.DeletedAhead))
	}
}
