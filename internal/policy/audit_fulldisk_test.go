package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/testfs"
)

// TestAuditFileStaysWholeLinesThroughAFullDisk: the disk fills in the
// middle of the stream — one page is left, so a record lands across its
// end and only part of it is written — then space returns. Every line of
// the file must still parse: the torn record is truncated away rather than
// left for the next record to be appended to.
func TestAuditFileStaysWholeLinesThroughAFullDisk(t *testing.T) {
	dir := testfs.Tmpfs(t, "64k")
	path := filepath.Join(dir, "audit.jsonl")
	sink, err := OpenFileSink(path, AuditSinkOptions{retryEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	// Fill the filesystem, then give one page back: the audit file can
	// grow by that page and no more.
	fillerPath := filepath.Join(dir, "filler")
	filler, err := os.Create(fillerPath)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 1024)
	var filled int64
	for range 1024 { // 64 KiB fills in 64 writes; bounded anyway
		n, err := filler.Write(chunk)
		filled += int64(n)
		if errors.Is(err, syscall.ENOSPC) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := filler.Truncate(filled - 4096); err != nil {
		t.Fatal(err)
	}
	filler.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	record := func(i int) AuditRecord {
		return AuditRecord{Time: time.Now(), CallerSubject: "agent", CallerMethod: "api-key", Tool: "create_note",
			CallID: strings.Repeat("c", 200) + string(rune('a'+i%26)), Decision: "allow", LatencyMS: 1}
	}
	var written, failed int
	for i := 0; failed == 0 && i < 100; i++ { // ~300 bytes each: the page holds about 13
		if err := sink.WriteWait(ctx, record(i)); err != nil {
			failed++
		} else {
			written++
		}
	}
	if failed == 0 || written == 0 {
		t.Fatalf("written %d, failed %d: the disk did not fill mid-stream", written, failed)
	}
	if sink.Healthy() {
		t.Error("sink healthy after a failed write")
	}

	// Space returns; the sink recovers by itself (an audit-gap line) and
	// later records are written whole.
	if err := os.Remove(fillerPath); err != nil {
		t.Fatal(err)
	}
	for !sink.Healthy() {
		select {
		case <-ctx.Done():
			t.Fatal("the sink did not recover after space returned")
		case <-time.After(10 * time.Millisecond):
		}
	}
	for i := range 5 {
		if err := sink.WriteWait(ctx, record(i)); err != nil {
			t.Fatalf("write after recovery: %v", err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		t.Fatalf("the file does not end with a whole line: %q", raw[max(0, len(raw)-80):])
	}
	var lines, gaps int
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		lines++
		var rec AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d is not a JSON record (a torn write left in the file): %v\n%q", lines, err, sc.Text())
		}
		if rec.Reason == ReasonAuditGap {
			gaps++
		}
	}
	if want := written + 5 + gaps; lines != want || gaps != 1 {
		t.Errorf("file has %d lines (%d gap lines); want %d: the %d records written before the disk filled, one gap line, the 5 after", lines, gaps, want, written)
	}
}
