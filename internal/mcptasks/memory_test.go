package mcptasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMemoryStore(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	m := NewMemory(3)
	m.now = func() time.Time { return now }
	rec := func(owner string, expiresIn time.Duration) Record {
		return Record{Owner: owner, Tool: "ev_research", Session: "s", UpstreamID: "u", Expires: now.Add(expiresIn).UnixMilli()}
	}
	if err := m.Put(ctx, "a1", rec("alice", time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := m.Put(ctx, "b1", rec("bob", time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := m.Put(ctx, "a2", rec("alice", 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Full (3): a fourth is refused until one expires.
	if err := m.Put(ctx, "a3", rec("alice", time.Minute)); !errors.Is(err, ErrFull) {
		t.Fatalf("a fourth record in a store of 3: %v; want ErrFull", err)
	}
	now = now.Add(2 * time.Second) // b1 expires
	if _, ok, _ := m.Get(ctx, "b1"); ok {
		t.Fatal("an expired record is still found")
	}
	if err := m.Put(ctx, "a3", rec("alice", time.Minute)); err != nil {
		t.Fatalf("a record once one expired: %v", err)
	}
	list, _ := m.List(ctx, "alice")
	var ids []string
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	if got := strings.Join(ids, ","); got != "a1,a3,a2" {
		t.Fatalf("alice's list = %s; want a1,a3,a2 (by expiry)", got)
	}
	if list, _ := m.List(ctx, "bob"); len(list) != 0 {
		t.Fatalf("bob's list = %v; want none", list)
	}
	_ = m.Delete(ctx, "a1")
	if _, ok, _ := m.Get(ctx, "a1"); ok {
		t.Fatal("a deleted record is still found")
	}
}

func TestMemoryOwnerBound(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(0)
	r := Record{Owner: "alice", Tool: "t", UpstreamID: "u", Expires: time.Now().Add(time.Hour).UnixMilli()}
	for i := range MaxPerOwner {
		if err := m.Put(ctx, fmt.Sprint(i), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Put(ctx, "over", r); !errors.Is(err, ErrFull) {
		t.Fatalf("task %d of one owner: %v; want ErrFull", MaxPerOwner+1, err)
	}
	r.Owner = "bob"
	if err := m.Put(ctx, "bob", r); err != nil {
		t.Fatalf("another owner's task: %v", err)
	}
}

func TestRecordCheck(t *testing.T) {
	long := strings.Repeat("x", MaxFieldBytes+1)
	ok := Record{Owner: "o", Tool: "t", Session: "s", UpstreamID: "u"}
	for _, c := range []struct {
		reason string
		edit   func(*Record)
		valid  bool
	}{
		{"complete", func(*Record) {}, true},
		{"no owner", func(r *Record) { r.Owner = "" }, false},
		{"no upstream id", func(r *Record) { r.UpstreamID = "" }, false},
		{"an upstream id over the bound", func(r *Record) { r.UpstreamID = long }, false},
		{"a session over the bound", func(r *Record) { r.Session = long }, false},
		{"a task of the 2026-07-28 extension, no session", func(r *Record) { r.Dialect, r.Session = "ext", "" }, true},
		{"an unknown dialect", func(r *Record) { r.Dialect = "v3" }, false},
	} {
		r := ok
		c.edit(&r)
		if err := r.Check(); (err == nil) != c.valid {
			t.Errorf("%s: Check = %v; want valid %v", c.reason, err, c.valid)
		}
	}
}

func TestIDs(t *testing.T) {
	for _, c := range []struct {
		reason, id string
		valid      bool
	}{
		{"a fresh id", NewID(), true},
		{"no prefix", strings.TrimPrefix(NewID(), "fdt-"), false},
		{"too short", "fdt-abc", false},
		{"not base64url", "fdt-" + strings.Repeat("!", 22), false},
		{"empty", "", false},
	} {
		if got := ValidID(c.id); got != c.valid {
			t.Errorf("%s: ValidID(%q) = %v; want %v", c.reason, c.id, got, c.valid)
		}
	}
	if a, b := NewID(), NewID(); a == b {
		t.Fatal("two fresh ids are equal")
	}
	if OwnerOf("apikey", "a") == OwnerOf("apikey", "b") || OwnerOf("apikey:", "a") == OwnerOf("apikey", ":a") {
		t.Fatal("distinct callers share an owner")
	}
}
