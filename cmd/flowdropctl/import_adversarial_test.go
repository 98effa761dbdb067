package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

var updateAdversarial = flag.Bool("update-adversarial", false, "rewrite testdata/adversarial/grpc-dag.binpb")

// dagDescriptorSet is testdata/adversarial/grpc-dag.binpb: messages L0 …
// L30 where each Li has two fields (a, b) of L(i+1), and a service Dag
// whose Walk takes L0. Inlined, L0's schema would hold 2^30 copies of L30.
func dagDescriptorSet() []byte {
	f := &descriptorpb.FileDescriptorProto{Name: proto.String("dag.proto"), Package: proto.String("dag"), Syntax: proto.String("proto3")}
	for i := 0; i <= 30; i++ {
		m := &descriptorpb.DescriptorProto{Name: proto.String(fmt.Sprintf("L%d", i))}
		if i < 30 {
			for j, n := range []string{"a", "b"} {
				m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{Name: proto.String(n), JsonName: proto.String(n), Number: proto.Int32(int32(j + 1)),
					Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(fmt.Sprintf(".dag.L%d", i+1))})
			}
		} else {
			m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{Name: proto.String("leaf"), JsonName: proto.String("leaf"), Number: proto.Int32(1),
				Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()})
		}
		f.MessageType = append(f.MessageType, m)
	}
	f.Service = []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Dag"), Method: []*descriptorpb.MethodDescriptorProto{
		{Name: proto.String("Walk"), InputType: proto.String(".dag.L0"), OutputType: proto.String(".dag.L30")}}}}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{f}})
	if err != nil {
		panic(err)
	}
	return b
}

func TestDagDescriptorSetFixtureIsCurrent(t *testing.T) {
	path := filepath.Join("testdata", "adversarial", "grpc-dag.binpb")
	if *updateAdversarial {
		if err := os.WriteFile(path, dagDescriptorSet(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, dagDescriptorSet()) {
		t.Errorf("%s differs from dagDescriptorSet (run go test -update-adversarial)", path)
	}
}

// TestImportOfSharedDefinitionsStaysCompact: an OpenAPI document (3.8 KB)
// and a descriptor set (1.7 KB) whose definitions reference each other as
// a DAG 30 levels deep (each level uses the next twice) used to crash
// flowdropctl with "fatal error: out of memory" while inlining 2^30
// copies. They import and register: the shared definitions stay shared
// ($defs, one per definition), the schema is a few KB, and the import
// (with the registry's admission, in process) allocates a bounded amount.
func TestImportOfSharedDefinitionsStaysCompact(t *testing.T) {
	gw := startRegistryGateway(t)
	conn, err := grpc.NewClient(gw, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc := gatewayv1.NewToolRegistryServiceClient(conn)
	for _, tc := range []struct {
		name, reason, tool string
		args               []string
		wantDefs           int
	}{
		{name: "openapi", reason: "components L1…L30 each once in $defs; L0, the body, is spread into the arguments",
			args: []string{"import", "openapi", "--spec", "testdata/adversarial/openapi-dag.yaml", "--base-url", "http://127.0.0.1:1"},
			tool: "dag", wantDefs: 30},
		{name: "grpc", reason: "messages dag.L1…dag.L30 each once in $defs; L0 is the root",
			args: []string{"import", "grpc", "--protoset", "testdata/adversarial/grpc-dag.binpb", "--target", "127.0.0.1:1"},
			tool: "Dag.Walk", wantDefs: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			code, out, errOut := ctl(t, append(append([]string{"tools"}, tc.args...), "--addr", gw)...)
			runtime.ReadMemStats(&after)
			if code != 0 {
				t.Fatalf("exit %d (%s)\nstdout %s\nstderr %s", code, tc.reason, out, errOut)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("the import allocated %d MiB; want at most 64 MiB (%s)", alloc>>20, tc.reason)
			}
			t.Logf("import: %v, %d KiB allocated", time.Since(start).Round(time.Millisecond), (after.TotalAlloc-before.TotalAlloc)>>10)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: tc.tool})
			if err != nil {
				t.Fatalf("GetTool %s: %v (stdout %q)", tc.tool, err, out)
			}
			schema := got.GetTool().GetInputSchema()
			if size := proto.Size(schema); size > 16<<10 {
				t.Errorf("the input schema is %d bytes; want it compact (≤ 16 KiB) (%s)", size, tc.reason)
			}
			if defs := schema.GetFields()["$defs"].GetStructValue().GetFields(); len(defs) != tc.wantDefs {
				t.Errorf("$defs has %d definitions; want %d (%s)", len(defs), tc.wantDefs, tc.reason)
			}
		})
	}
}
