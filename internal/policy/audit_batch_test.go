package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"
)

// batchWriter holds its first Write until released, then counts writes
// and fails them when failAfter says so.
type batchWriter struct {
	entered, release chan struct{}
	mu               sync.Mutex
	writes           int
	fail             bool
	buf              bytes.Buffer
}

func (w *batchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	first := w.writes == 1
	w.mu.Unlock()
	if first {
		w.entered <- struct{}{}
		<-w.release
	}
	if w.fail {
		return 0, errors.New("disk gone")
	}
	return w.buf.Write(p)
}

// TestAuditSinkBatchesQueuedRecords: records queued while a write is in
// progress go out in one write, in queue order, each whole; when that
// write fails every record of the batch hears it and is counted dropped.
func TestAuditSinkBatchesQueuedRecords(t *testing.T) {
	rec := func(i int) AuditRecord {
		return AuditRecord{Time: time.Unix(0, 0), Tool: "t", CallID: strconv.Itoa(i), Decision: DecisionAllow}
	}
	waitQueued := func(s *AuditSink, n int) {
		for range 2000 { // bounded: 2 s
			if len(s.q) == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("queue never held %d records", n)
	}

	t.Run("written", func(t *testing.T) {
		w := &batchWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
		s := NewWriterSink(w, AuditSinkOptions{})
		if err := s.Write(rec(0)); err != nil {
			t.Fatal(err)
		}
		<-w.entered
		for i := 1; i < 10; i++ {
			if err := s.Write(rec(i)); err != nil {
				t.Fatal(err)
			}
		}
		waitQueued(s, 9)
		close(w.release)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if w.writes != 2 {
			t.Errorf("%d writes; want 2 (the first record, then the 9 queued behind it in one)", w.writes)
		}
		sc := bufio.NewScanner(&w.buf)
		i := 0
		for ; sc.Scan(); i++ {
			var got AuditRecord
			if err := json.Unmarshal(sc.Bytes(), &got); err != nil || got.CallID != strconv.Itoa(i) {
				t.Fatalf("line %d = %q (%v); want call %d, whole and in order", i, sc.Text(), err, i)
			}
		}
		if i != 10 {
			t.Errorf("%d lines; want 10", i)
		}
	})

	t.Run("failed", func(t *testing.T) {
		w := &batchWriter{entered: make(chan struct{}, 1), release: make(chan struct{}), fail: true}
		s := NewWriterSink(w, AuditSinkOptions{retryEvery: time.Hour})
		ctx := context.Background()
		errs := make(chan error, 6)
		go func() { errs <- s.WriteWait(ctx, rec(0)) }()
		<-w.entered
		for i := 1; i < 6; i++ {
			go func() { errs <- s.WriteWait(ctx, rec(i)) }()
		}
		waitQueued(s, 5)
		close(w.release)
		for range 6 {
			if err := <-errs; !errors.Is(err, ErrAuditUnwritable) {
				t.Errorf("a waiter heard %v; want ErrAuditUnwritable (its line was not written)", err)
			}
		}
		if got := s.Dropped(); got != 6 {
			t.Errorf("dropped %d; want 6 (every record of the failed batch counted)", got)
		}
		s.Close()
	})
}
