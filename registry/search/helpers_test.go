package search

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

func tool(i int, desc string) registry.Tool {
	s, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"itemId": map[string]any{"type": "string"}}})
	return registry.Tool{Name: fmt.Sprintf("t%d", i), Description: "tool " + desc, Backend: "127.0.0.1:7001", InputSchema: s}
}

func start(t *testing.T, n int) (*registry.Registry, *Index) {
	t.Helper()
	ctx := context.Background()
	st := memstore.New()
	tools := make([]registry.Tool, n)
	for i := range tools {
		tools[i] = tool(i, "first")
	}
	if err := registry.Seed(ctx, st, tools); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, registry.WithLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))))
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	x := New(reg)
	t.Cleanup(func() { x.Close(); reg.Close(); st.Close() })
	return reg, x
}

func update(t *testing.T, reg *registry.Registry, i int, desc string) {
	t.Helper()
	if _, err := reg.Register(context.Background(), tool(i, desc), registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
}
