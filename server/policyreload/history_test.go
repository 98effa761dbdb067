package policyreload

import (
	"errors"
	"fmt"
	"testing"
)

// TestHistory: each reload, swapped in or refused, is on the history with
// the hashes (a refusal's names the policy that stayed), oldest first,
// and only the newest MaxHistory are kept.
func TestHistory(t *testing.T) {
	r, _, _ := newReloader(t, 0)
	ok := func(_, _ *policy) (Applied, error) { return Applied{}, nil }
	refuse := func(_, _ *policy) (Applied, error) { return Applied{}, errors.New("bad") }
	if h := r.History(); len(h) != 0 {
		t.Fatalf("history at start = %+v, want empty (the policy at start is not a reload)", h)
	}
	if err := r.Reload(policy{Name: "b"}, ok); err != nil {
		t.Fatal(err)
	}
	_ = r.Reload(policy{Name: "c"}, refuse)
	_ = r.Refuse(errors.New("does not parse"))
	h := r.History()
	for i, c := range []struct {
		reason         string
		ok             bool
		hash, previous string
	}{
		{"swapped in: the new hash and the one it replaced", true, "h-b", "h-a"},
		{"refused by apply: the hash that stayed in force", false, "h-b", ""},
		{"refused before apply (a file that does not parse)", false, "h-b", ""},
	} {
		if i >= len(h) || h[i].OK != c.ok || h[i].Hash != c.hash || h[i].Previous != c.previous || h[i].Time.IsZero() {
			t.Errorf("history[%d] = %+v, want ok=%t hash=%s previous=%q (%s)", i, h, c.ok, c.hash, c.previous, c.reason)
		}
	}
	for i := range MaxHistory + 5 {
		if err := r.Reload(policy{Name: fmt.Sprint(i)}, ok); err != nil {
			t.Fatal(err)
		}
	}
	h = r.History()
	if len(h) != MaxHistory || h[len(h)-1].Hash != fmt.Sprintf("h-%d", MaxHistory+4) || h[0].Hash != "h-5" /* 3 + 37 events: the first 8 dropped */ {
		t.Errorf("after %d more reloads: %d kept, first %s, last %s; want the newest %d", MaxHistory+5, len(h), h[0].Hash, h[len(h)-1].Hash, MaxHistory)
	}
}
