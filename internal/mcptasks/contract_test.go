package mcptasks_test

// One contract, every store: the same table runs against Memory and Redis
// (a real redis-server from PATH).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
)

func stores() []struct {
	name string
	open func(t *testing.T) mcptasks.Store
} {
	return []struct {
		name string
		open func(t *testing.T) mcptasks.Store
	}{
		{"memory", func(*testing.T) mcptasks.Store { return mcptasks.NewMemory(0) }},
		{"redis", func(t *testing.T) mcptasks.Store {
			rs := redistest.Start(t)
			c, err := redisstate.Open(redisstate.Config{Addr: rs.Addr(), Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c.Tasks("test:task:")
		}},
		{"redis-cluster", func(t *testing.T) mcptasks.Store {
			cl := redistest.StartCluster(t)
			c, err := redisstate.Open(redisstate.Config{Addr: cl.Addrs(), Mode: redisstate.ModeCluster, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c.Tasks("test:task:")
		}},
		{"redis-sentinel", func(t *testing.T) mcptasks.Store {
			sn := redistest.StartSentinel(t)
			c, err := redisstate.Open(redisstate.Config{Addr: sn.Addrs(), Mode: redisstate.ModeSentinel,
				SentinelMaster: redistest.MasterName, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c.Tasks("test:task:")
		}},
	}
}

func TestStoreContract(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			ctx := context.Background()
			s := sk.open(t)
			live := time.Now().Add(time.Hour).UnixMilli()
			rec := func(owner string, expires int64) mcptasks.Record {
				return mcptasks.Record{Owner: owner, Tool: "ev_research", Session: "sess", UpstreamID: "up-" + owner, Expires: expires}
			}
			for _, c := range []struct {
				reason string
				id     string
				r      mcptasks.Record
			}{
				{"alice's first", "a1", rec("alice", live)},
				{"alice's second", "a2", rec("alice", live+1)},
				{"bob's", "b1", rec("bob", live)},
				{"an expired one", "x1", rec("alice", time.Now().Add(-time.Second).UnixMilli())},
				{"a task of the 2026-07-28 extension", "e1", mcptasks.Record{Owner: "carol", Tool: "ev_with_task", UpstreamID: "up-e", Dialect: "ext", Expires: live}},
			} {
				if err := s.Put(ctx, c.id, c.r); err != nil {
					t.Fatalf("%s: Put: %v", c.reason, err)
				}
			}
			for _, c := range []struct {
				reason, id string
				found      bool
				owner      string
			}{
				{"a live record", "a1", true, "alice"},
				{"another owner's live record (the face compares owners)", "b1", true, "bob"},
				{"an expired record", "x1", false, ""},
				{"no record", "zz", false, ""},
			} {
				r, ok, err := s.Get(ctx, c.id)
				if err != nil || ok != c.found || (ok && r.Owner != c.owner) {
					t.Errorf("%s: Get(%q) = %+v, %v, %v; want found %v owned by %q", c.reason, c.id, r, ok, err, c.found, c.owner)
				}
			}
			if r, ok, err := s.Get(ctx, "e1"); err != nil || !ok || r.Dialect != "ext" || r.UpstreamID != "up-e" {
				t.Errorf("the extension's task: Get = %+v, %v, %v; want its dialect and upstream id kept", r, ok, err)
			}
			list, err := s.List(ctx, "alice")
			if err != nil || len(list) != 2 || list[0].ID != "a1" || list[1].ID != "a2" || list[0].UpstreamID != "up-alice" {
				t.Fatalf("alice's List = %+v, %v; want a1, a2 (live, hers, by expiry)", list, err)
			}
			if err := s.Delete(ctx, "a1"); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.Get(ctx, "a1"); ok {
				t.Fatal("a deleted record is still found")
			}
			if list, _ := s.List(ctx, "alice"); len(list) != 1 {
				t.Fatalf("alice's List after a delete = %+v; want a2 alone", list)
			}
			if err := s.Put(ctx, "bad", mcptasks.Record{Owner: "alice"}); err == nil {
				t.Fatal("a record without tool or upstream id was stored")
			}
		})
	}
}

func TestStoreOwnerBound(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			ctx := context.Background()
			s := sk.open(t)
			r := mcptasks.Record{Owner: "carol", Tool: "t", UpstreamID: "u", Expires: time.Now().Add(time.Hour).UnixMilli()}
			for i := range mcptasks.MaxPerOwner {
				if err := s.Put(ctx, fmt.Sprint("c", i), r); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Put(ctx, "one-more", r); !errors.Is(err, mcptasks.ErrFull) {
				t.Fatalf("task %d of one owner: %v; want ErrFull", mcptasks.MaxPerOwner+1, err)
			}
			r.Owner = "dave"
			if err := s.Put(ctx, "dave", r); err != nil {
				t.Fatalf("another owner's task: %v", err)
			}
		})
	}
}

// TestStoreUpdate: Update changes a live record atomically and keeps its
// owner and expiry; concurrent updates are all kept (none lost); an
// error from f writes nothing; a record over the input bounds is refused;
// no live record is false.
func TestStoreUpdate(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			ctx := context.Background()
			s := sk.open(t)
			expires := time.Now().Add(time.Hour).UnixMilli()
			if err := s.Put(ctx, "u1", mcptasks.Record{Owner: "alice", Tool: "t", UpstreamID: "u", Expires: expires}); err != nil {
				t.Fatal(err)
			}
			const n = 8
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, ok, err := s.Update(ctx, "u1", func(r *mcptasks.Record) error {
						if r.Input == nil {
							r.Input = &mcptasks.Input{}
						}
						r.Input.Pending = append(r.Input.Pending, mcptasks.Pending{Key: fmt.Sprint("k", i), ID: json.RawMessage(`1`), Method: "elicitation/create", Params: json.RawMessage(`{}`)})
						r.Owner, r.Expires = "mallory", 1 // neither is f's to change
						return nil
					})
					if err != nil || !ok {
						t.Errorf("Update %d: %v, %v", i, ok, err)
					}
				})
			}
			wg.Wait()
			r, ok, err := s.Get(ctx, "u1")
			if err != nil || !ok || r.Owner != "alice" || r.Expires != expires || r.Input == nil || len(r.Input.Pending) != n {
				t.Fatalf("after %d concurrent updates: %+v, %v, %v; want alice's record, its expiry, %d requests (none lost)", n, r, ok, err, n)
			}
			stop := errors.New("stop")
			if _, _, err := s.Update(ctx, "u1", func(r *mcptasks.Record) error { r.Input = nil; return stop }); !errors.Is(err, stop) {
				t.Fatalf("Update whose f fails: %v; want f's error", err)
			}
			over := func(r *mcptasks.Record) error {
				for i := range mcptasks.MaxPending {
					r.Input.Pending = append(r.Input.Pending, mcptasks.Pending{Key: fmt.Sprint("o", i)})
				}
				return nil
			}
			if _, _, err := s.Update(ctx, "u1", over); err == nil {
				t.Fatal("Update over MaxPending requests was stored")
			}
			if r, _, _ := s.Get(ctx, "u1"); r.Input == nil || len(r.Input.Pending) != n {
				t.Fatalf("after refused updates: %+v; want the record unchanged", r.Input)
			}
			if _, ok, err := s.Update(ctx, "none", func(*mcptasks.Record) error { return nil }); ok || err != nil {
				t.Fatalf("Update of no record: %v, %v; want false", ok, err)
			}
		})
	}
}
