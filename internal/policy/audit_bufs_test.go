package policy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// wireArgs is args as google.protobuf.Struct bytes, as InvokeTool carries them.
func wireArgs(t *testing.T, args map[string]any) []byte {
	t.Helper()
	s, err := structpb.NewStruct(args)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAuditCallReusesItsBuffers: a fail-closed call's audit — its
// arguments encoded from the wire, its line built and written, the
// arguments released — allocates nothing once the pool is warm: both
// buffers are recycled rather than left to the collector on every call.
func TestAuditCallReusesItsBuffers(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector")
	}
	s, err := OpenFileSink(filepath.Join(t.TempDir(), "audit.jsonl"), AuditSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	args := wireArgs(t, map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}, "body": "hello"})
	ctx := context.Background()
	call := func() {
		rec := AuditRecord{Time: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC), CallerSubject: "bench-agent", CallerMethod: MethodAPIKey,
			Tool: "bench_tool", CallID: "c1", Decision: DecisionAllow, BackendCode: "OK", LatencyMS: 0.5}
		if err := rec.SetArgsWire(nil, args, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteWait(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.ReleaseArgs()
	}
	call()
	if n := testing.AllocsPerRun(200, call); n != 0 {
		t.Errorf("a call's audit allocates %v times, want 0 (the arguments' and the line's buffers reused)", n)
	}
}

// TestAuditPooledBuffersKeepEveryLine: with buffers recycled, lines
// written concurrently — by their callers, batched by the writer, and
// queued without waiting — still each carry their own call's arguments:
// no buffer goes back to the pool while a line in it is still to be
// written or read.
func TestAuditPooledBuffersKeepEveryLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFileSink(path, AuditSinkOptions{QueueSize: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	const workers, calls = 8, 300
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				id := fmt.Sprintf("w%d-%d", w, i)
				rec := AuditRecord{Time: time.Unix(0, 0), Tool: "t", CallID: id, Decision: DecisionAllow}
				// Sizes differ call to call, so a reused buffer's stale tail would show.
				args, err := structpb.NewStruct(map[string]any{"id": id, "pad": fmt.Sprintf("%0*d", (w*calls+i)%97, 0)})
				if err != nil {
					t.Error(err)
					return
				}
				if err := rec.SetArgs(nil, args, nil); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					err = s.Write(rec)
				} else {
					err = s.WriteWait(ctx, rec)
				}
				rec.ReleaseArgs()
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
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			CallID string `json:"call_id"`
			Args   struct {
				ID  string `json:"id"`
				Pad string `json:"pad"`
			} `json:"args_sent"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not one record: %v: %.200s", len(seen)+1, err, sc.Text())
		}
		if line.Args.ID != line.CallID || seen[line.CallID] {
			t.Fatalf("line of call %q has the arguments of %q (or is written twice)", line.CallID, line.Args.ID)
		}
		seen[line.CallID] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != workers*calls {
		t.Fatalf("%d lines, want %d", len(seen), workers*calls)
	}
}
