package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/etcdstore"
)

// guard bounds waits so a regression fails instead of hanging the test.
const guard = 30 * time.Second

func TestEtcdOutageAndRecovery(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	s, err := etcdstore.New(cli, "/outage", etcdstore.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	a, err := s.Put(ctx, registry.Tool{Name: "a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Watch(wctx, a.Revision)
	if err != nil {
		t.Fatal(err)
	}

	cluster.Stop()

	done := make(chan struct{})
	go func() {
		defer close(done)
		calls := []struct {
			op  string
			run func() error
		}{
			{"Put", func() error { _, err := s.Put(ctx, registry.Tool{Name: "b"}, nil); return err }},
			{"Put expected", func() error { _, err := s.Put(ctx, registry.Tool{Name: "b"}, new(int64)); return err }},
			{"List", func() error { _, _, err := s.List(ctx); return err }},
			{"Get", func() error { _, err := s.Get(ctx, "a"); return err }},
			{"Delete", func() error { _, err := s.Delete(ctx, "a", nil); return err }},
			{"Watch", func() error { _, err := s.Watch(ctx, a.Revision); return err }},
		}
		for _, c := range calls {
			err := c.run()
			// registry.ErrUnavailable is what the gateway maps to Unavailable;
			// the text must still say that etcd is what is down.
			if !errors.Is(err, registry.ErrUnavailable) || !errors.Is(err, etcdstore.ErrUnavailable) ||
				!strings.HasPrefix(err.Error(), "etcd unavailable: ") {
				t.Errorf("%s with etcd stopped = %v; want registry.ErrUnavailable (\"etcd unavailable: ...\")", c.op, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatalf("calls with etcd stopped did not return within %s: the per-call timeout is not applied", guard)
	}

	cluster.Restart()

	// The client reconnects with backoff: retry the write a bounded number of times.
	var b registry.Tool
	for i := 0; ; i++ {
		b, err = s.Put(ctx, registry.Tool{Name: "b"}, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, registry.ErrUnavailable) || i == 30 {
			t.Fatalf("Put after restart (attempt %d): %v", i, err)
		}
	}
	if b.Revision <= a.Revision {
		t.Errorf("revision after restart %d, want > %d (same data dir)", b.Revision, a.Revision)
	}
	if got, err := s.Get(ctx, "a"); err != nil || got.Revision != a.Revision {
		t.Errorf("Get(a) after restart = %+v, %v; want revision %d kept", got, err, a.Revision)
	}
	// The open watch either resumes (delivers a put of b) or closes so the
	// caller re-lists. A Put that timed out while the client reconnected may
	// still have been applied (a timeout does not say a write failed), so the
	// first event may be an earlier put of b, never a later one.
	select {
	case ev, ok := <-ch:
		if ok && (ev.Type != registry.EventPut || ev.Tool.Name != "b" || ev.Revision <= a.Revision || ev.Revision > b.Revision) {
			t.Errorf("resumed watch delivered %+v, want a put of b after %d, at most %d", ev, a.Revision, b.Revision)
		}
		t.Logf("watch after restart: resumed=%v", ok)
	case <-time.After(guard):
		t.Fatalf("watch neither resumed nor closed within %s", guard)
	}
}

func TestWatchCompacted(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	s, err := etcdstore.New(cli, "/compact")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var revs []int64
	for i := range 4 {
		got, err := s.Put(ctx, registry.Tool{Name: fmt.Sprintf("t%d", i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, got.Revision)
	}
	if _, err := cli.Compact(ctx, revs[2]); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason    string
		after     int64
		compacted bool
	}{
		{"events after 'after' were compacted away", revs[0], true},
		{"watching from the compaction revision itself is still possible", revs[2] - 1, false},
		{"after the compaction revision", revs[2], false},
		{"ahead of the store", revs[3] + 100, false},
	}
	for _, c := range cases {
		wctx, cancel := context.WithCancel(ctx)
		ch, err := s.Watch(wctx, c.after)
		if got := errors.Is(err, registry.ErrCompacted); got != c.compacted {
			t.Errorf("Watch(%d) = %v; compacted %v, want %v (%s)", c.after, err, got, c.compacted, c.reason)
		}
		if err == nil && c.after < revs[3] {
			// The first event must be the one right after 'after'.
			select {
			case ev, ok := <-ch:
				if !ok || ev.Revision <= c.after {
					t.Errorf("Watch(%d) first event %+v (open %v), want revision > %d (%s)", c.after, ev, ok, c.after, c.reason)
				}
			case <-time.After(guard):
				t.Fatalf("Watch(%d): no event (%s)", c.after, c.reason)
			}
		}
		cancel()
	}
}

func TestNewAndClose(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	for _, c := range []struct{ prefix, reason string }{
		{"", "an empty prefix would put tools at the root of the key space"},
		{"/", "a bare slash is an empty prefix"},
	} {
		if _, err := etcdstore.New(cli, c.prefix); err == nil {
			t.Errorf("New(%q) succeeded (%s)", c.prefix, c.reason)
		}
	}
	if _, err := etcdstore.New(nil, "/x"); err == nil {
		t.Error("New(nil client) succeeded")
	}
	s, err := etcdstore.New(cli, "/closing/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ch, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Error("watch delivered an event after Close")
		}
	case <-time.After(guard):
		t.Fatal("watch channel still open after Close")
	}
	if _, err := s.Put(ctx, registry.Tool{Name: "x"}, nil); !errors.Is(err, registry.ErrClosed) {
		t.Errorf("Put after Close = %v, want ErrClosed", err)
	}
	var te *registry.ToolError
	s2, _ := etcdstore.New(cli, "/names")
	if _, err := s2.Put(ctx, registry.Tool{Name: "a/b"}, nil); !errors.As(err, &te) {
		t.Errorf("Put of a name with '/' = %v, want a ToolError (it would escape the key layout)", err)
	}
}

// TestListCorruptRecord: a List whose pages are decoded while the next is
// fetched fails on a stored record it cannot read, naming its key (the
// first in key order when several are), and returns no partial list; the
// same store lists again once the record is replaced.
func TestListCorruptRecord(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	ctx := context.Background()
	s, err := etcdstore.New(cli, "/corrupt", etcdstore.WithPageSize(7))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		if _, err := s.Put(ctx, registry.Tool{Name: fmt.Sprintf("t%03d", i), Backend: "b:1"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/corrupt/tools/t035", `{"v":1,"name":"t035","input_schema":{"type":`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/corrupt/tools/t080", `{"v":1,"name":"other"}`); err != nil {
		t.Fatal(err)
	}
	tools, _, err := s.List(ctx)
	if err == nil || tools != nil || !strings.Contains(err.Error(), `"/corrupt/tools/t035"`) {
		t.Fatalf("List = %d tools, %v; want an error naming t035's key", len(tools), err)
	}
	if _, err := s.Put(ctx, registry.Tool{Name: "t035", Backend: "b:1"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.List(ctx); err == nil || !strings.Contains(err.Error(), `key "/corrupt/tools/t080" holds tool "other"`) {
		t.Fatalf("List = %v; want an error naming t080's key", err)
	}
	if _, err := s.Put(ctx, registry.Tool{Name: "t080", Backend: "b:1"}, nil); err != nil {
		t.Fatal(err)
	}
	if tools, _, err := s.List(ctx); err != nil || len(tools) != 100 {
		t.Fatalf("List after repair = %d tools, %v; want 100", len(tools), err)
	}
}

// TestListTimeoutPerPage: the request timeout bounds each page of a List,
// not the whole paged read — a list that takes longer than the timeout in
// all (here: slowed after every page) still loads; a gateway with 100,000
// tools lists a hundred pages under the default of 3 s each.
func TestListTimeoutPerPage(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	ctx := context.Background()
	const timeout, pages = time.Second, 20
	s, err := etcdstore.New(cli, "/slow", etcdstore.WithPageSize(1), etcdstore.WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range pages {
		if _, err := s.Put(ctx, registry.Tool{Name: fmt.Sprintf("t%02d", i), Backend: "b:1"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	defer etcdstore.SetPageFetched(func() { time.Sleep(2 * timeout / pages) })()
	tools, _, err := s.List(ctx)
	if err != nil || len(tools) != pages {
		t.Fatalf("List = %d tools, %v; want all %d although the read took longer than the %s timeout", len(tools), err, pages, timeout)
	}
}
