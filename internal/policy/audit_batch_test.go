package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
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
	// waitPending: n records queued and not yet written (the one being
	// written by the writer goroutine counts until its write returns).
	waitPending := func(s *AuditSink, n int64) {
		for range 2000 { // bounded: 2 s
			if s.pending.Load() == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("never %d records pending (now %d)", n, s.pending.Load())
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
		waitPending(s, 10)
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
		// Nothing queued: the first writes in its own goroutine and is
		// held there; the five behind it queue for the writer.
		go func() { errs <- s.WriteWait(ctx, rec(0)) }()
		<-w.entered
		for i := 1; i < 6; i++ {
			go func() { errs <- s.WriteWait(ctx, rec(i)) }()
		}
		waitPending(s, 5)
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

// stackWriter records whether each write ran on a stack that has the test
// function on it, i.e. in the caller's goroutine rather than the writer's.
type stackWriter struct {
	mu       sync.Mutex
	inCaller []bool
	buf      bytes.Buffer
}

func (w *stackWriter) Write(p []byte) (int, error) {
	st := make([]byte, 64<<10)
	st = st[:runtime.Stack(st, false)]
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inCaller = append(w.inCaller, bytes.Contains(st, []byte("TestAuditWriteWaitWritesInItsCaller")))
	return w.buf.Write(p)
}

// TestAuditWriteWaitWritesInItsCaller: with nothing queued, a waiting
// call's line is written by the call itself (no hand-off to the writer
// goroutine and back); a record queued by Write still goes to the writer.
func TestAuditWriteWaitWritesInItsCaller(t *testing.T) {
	w := &stackWriter{}
	s := NewWriterSink(w, AuditSinkOptions{})
	rec := AuditRecord{Time: time.Unix(0, 0), Tool: "t", CallID: "c", Decision: DecisionAllow}
	for range 3 {
		if err := s.WriteWait(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, true, false}; !slices.Equal(w.inCaller, want) {
		t.Errorf("written in the caller's goroutine: %v; want %v", w.inCaller, want)
	}
}

// TestAuditSinkKeepsEachCallersOrder: callers mixing queued (Write) and
// waiting (WriteWait) records, concurrently: each caller's lines are in
// the file in the order it wrote them — a waiting record written by its
// caller never overtakes one the same caller queued before it.
func TestAuditSinkKeepsEachCallersOrder(t *testing.T) {
	var buf lockedBuffer
	s := NewWriterSink(&buf, AuditSinkOptions{QueueSize: 1 << 16})
	const callers, each = 8, 400
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				rec := AuditRecord{Time: time.Unix(0, 0), Tool: "t", CallerSubject: strconv.Itoa(c), CallID: strconv.Itoa(i), Decision: DecisionAllow}
				var err error
				if i%3 == 2 {
					err = s.WriteWait(context.Background(), rec)
				} else {
					err = s.Write(rec)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, callers)
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var got AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		c, _ := strconv.Atoi(got.CallerSubject)
		if i, _ := strconv.Atoi(got.CallID); i != next[c] {
			t.Fatalf("caller %d: record %d where %d was due: out of the caller's order", c, i, next[c])
		}
		next[c]++
	}
	for c, n := range next {
		if n != each {
			t.Errorf("caller %d: %d lines; want %d", c, n, each)
		}
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}
