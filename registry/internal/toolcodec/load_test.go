package toolcodec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry"
)

// loadSet is n stored tools: even ones share one schema, odd ones each
// have their own (a description naming the tool).
func loadSet(t *testing.T, n int) ([][]byte, []registry.Tool) {
	t.Helper()
	shared := nestedSchema(t)
	vals := make([][]byte, n)
	tools := make([]registry.Tool, n)
	for i := range n {
		s := shared
		if i%2 == 1 {
			s = mustStruct(t, map[string]any{"type": "object", "description": fmt.Sprintf("tool %d", i)})
		}
		tools[i] = registry.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: s, OutputSchema: shared, Backend: "b:1", Timeout: time.Second, Revision: int64(i + 1)}
		v, err := Encode(tools[i])
		if err != nil {
			t.Fatal(err)
		}
		vals[i] = v
	}
	return vals, tools
}

// TestLoaderDecodeAll: a Loader decodes a list (on several workers: more
// than serialBelow values a CPU) exactly as Decode does one value at a
// time, shares byte-identical schemas and only those, and fails a list
// with the error of its lowest failing index.
func TestLoaderDecodeAll(t *testing.T) {
	const n = 40 * serialBelow
	vals, want := loadSet(t, n)
	got, err := NewLoader().DecodeAll(vals, func(int, *registry.Tool, error) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		one, err := Decode(vals[i])
		if err != nil {
			t.Fatal(err)
		}
		assertToolEqual(t, got[i], one, "DecodeAll must decode each value as Decode does")
		assertToolEqual(t, got[i], want[i], "DecodeAll must decode what Encode wrote")
	}
	if got[0].InputSchema != got[2].InputSchema || got[0].InputSchema != got[1].OutputSchema {
		t.Error("byte-identical schemas must share one decoded Struct")
	}
	if got[1].InputSchema == got[3].InputSchema || got[1].InputSchema == got[0].InputSchema {
		t.Error("different schemas must not be shared")
	}

	// check sees every value, and the lowest failing index's error wins.
	bad := slices.Clone(vals)
	bad[n/2], bad[n-1] = []byte(`{"v":99,"name":"x"}`), []byte(`not json`)
	seen := make([]bool, n)
	_, err = NewLoader().DecodeAll(bad, func(i int, tool *registry.Tool, err error) error {
		seen[i] = true
		if err != nil {
			return fmt.Errorf("value %d: %w", i, err)
		}
		return nil
	})
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("value %d: ", n/2)) || !strings.Contains(err.Error(), "unsupported format version 99") {
		t.Fatalf("error %v, want the one of value %d (the lowest failing index)", err, n/2)
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("check not called for value %d", i)
		}
	}

	// check may amend a tool and refuse one.
	refused := errors.New("refused")
	got, err = NewLoader().DecodeAll(vals[:3], func(i int, tool *registry.Tool, err error) error {
		tool.Revision = 1000 + int64(i)
		return err
	})
	if err != nil || got[2].Revision != 1002 {
		t.Fatalf("check's amendment lost: %v, revision %d", err, got[2].Revision)
	}
	if _, err := NewLoader().DecodeAll(vals[:3], func(i int, _ *registry.Tool, _ error) error {
		if i == 1 {
			return refused
		}
		return nil
	}); !errors.Is(err, refused) {
		t.Fatalf("check's refusal lost: %v", err)
	}
}
