package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// brokenDisk fails every write while broken is set.
type brokenDisk struct{ broken atomic.Bool }

func (d *brokenDisk) Write(p []byte) (int, error) {
	if d.broken.Load() {
		return 0, errors.New("disk gone")
	}
	return len(p), nil
}

// TestRegistryWriteWhoseLineFails: under fail-closed audit, an applied
// registry write whose line cannot be written is answered Unavailable
// saying the change was made; a refused one is answered as it is; and
// while the sink is failing the next write is refused up front. Under
// fail-open neither is refused.
func TestRegistryWriteWhoseLineFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name       string
		failClosed bool
	}{{"fail-closed", true}, {"fail-open", false}} {
		t.Run(tc.name, func(t *testing.T) {
			disk := &brokenDisk{}
			sink := policy.NewWriterSink(disk, policy.AuditSinkOptions{})
			defer sink.Close()
			a := pipeline.NewAuditRecorder(sink, tc.failClosed, nil)
			w := pipeline.RegistryWrite{Start: time.Now(), Operation: "RegisterTool", Tool: "t", Decision: policy.DecisionAllow}
			if e := a.BeginRegistryWrite("t"); e != nil {
				t.Fatalf("BeginRegistryWrite on a healthy sink: %v", e)
			}
			if e := a.RecordRegistryWrite(ctx, w); e != nil {
				t.Fatalf("RecordRegistryWrite on a healthy sink: %v", e)
			}
			disk.broken.Store(true)
			denied := w
			denied.Decision = policy.DecisionDeny
			if e := a.RecordRegistryWrite(ctx, denied); e != nil {
				t.Errorf("a refused write whose line fails: %v; want the refusal answered as it is (nil here)", e)
			}
			e := a.RecordRegistryWrite(ctx, w)
			if !tc.failClosed {
				if e != nil {
					t.Errorf("fail-open: %v; want nil", e)
				}
				if e := a.BeginRegistryWrite("t"); e != nil {
					t.Errorf("fail-open BeginRegistryWrite while failing: %v; want nil", e)
				}
				return
			}
			if e == nil || e.Code != pipeline.Unavailable || !strings.Contains(e.Message, "change was made") {
				t.Errorf("an applied write whose line fails: %v; want Unavailable saying the change was made", e)
			}
			if e := a.BeginRegistryWrite("t"); e == nil || e.Code != pipeline.Unavailable {
				t.Errorf("BeginRegistryWrite while the sink fails: %v; want Unavailable", e)
			}
		})
	}
}
