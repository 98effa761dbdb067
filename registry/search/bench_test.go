package search_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// synthetic is n tools with names, descriptions and parameters drawn from
// a fixed vocabulary (Zipf-distributed description words, as in text), the
// same for every run.
func synthetic(t testing.TB, n int) []registry.Tool {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 4000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%sx", strings.Repeat(string(rune('a'+i%26)), 1+i/26%4)) + fmt.Sprint(i/104)
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 2, uint64(len(vocab)-1))
	services := []string{"billing", "crm", "github", "k8s", "slack", "calendar", "storage", "search", "maps", "shop"}
	verbs := []string{"get", "list", "create", "update", "delete", "search", "sync", "export", "import", "run"}
	tools := make([]registry.Tool, n)
	for i := range tools {
		var desc strings.Builder
		for range 12 + rng.IntN(20) {
			desc.WriteString(vocab[zipf.Uint64()])
			desc.WriteByte(' ')
		}
		props := map[string]any{}
		for range 2 + rng.IntN(5) {
			props[vocab[rng.IntN(400)]+"Id"] = map[string]any{"type": "string"}
		}
		tools[i] = registry.Tool{
			Name:        fmt.Sprintf("%s.%s_%s_%d", services[i%len(services)], verbs[rng.IntN(len(verbs))], vocab[rng.IntN(len(vocab))], i),
			Description: desc.String(), Backend: "127.0.0.1:7001",
			InputSchema: mustStruct(t, map[string]any{"type": "object", "properties": props}),
		}
	}
	return tools
}

// BenchmarkSearch ranks a three-word query over 10k and 100k tools with
// every tool visible through a glob check, and reports the index's heap
// (index-MiB: live heap after building it minus before).
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			_, idx := withTools(b, synthetic(b, n))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if _, err := idx.Search("wax0", 1, nil); err != nil { // builds the index
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			visible := func(name string) bool { return !strings.HasPrefix(name, "secret.") }
			queries := []string{"list wbbx0 wccx1", "github create wax0", "update wddddx3 itemId", "waaax2 sync export"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				hits, err := idx.Search(queries[i%len(queries)], 10, visible)
				if err != nil || len(hits) == 0 {
					b.Fatal(err, len(hits))
				}
			}
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "index-MiB")
			runtime.KeepAlive(idx)
		})
	}
}
