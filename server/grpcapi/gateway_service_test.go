package grpcapi

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/normalize"
)

// TestRawResponseRepairsAsDecoded: the raw path's response (the backend's
// InvokeResponse bytes with the repairs appended by invokewire) decodes as
// the response the decoded path builds with repairsProto, for every field
// combination: the face's two ways of answering agree.
func TestRawResponseRepairsAsDecoded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		repairs      []normalize.Repair
	}{
		{name: "json", reason: "a JSON repair has no passes", repairs: []normalize.Repair{{Path: "/tags", Kind: normalize.JSONDecoded}}},
		{name: "entities", reason: "entity repairs carry passes and the bound", repairs: []normalize.Repair{
			{Path: "/title", Kind: normalize.EntitiesDecoded, Passes: 2},
			{Path: "/body", Kind: normalize.EntitiesDecoded, Passes: 300, BoundHit: true}}},
		{name: "root", reason: "the root pointer is the empty string, which proto3 omits", repairs: []normalize.Repair{{Path: "", Kind: normalize.JSONDecoded}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			backend := &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("ok & done"), IsError: true}
			enc, err := proto.Marshal(backend)
			if err != nil {
				t.Fatal(err)
			}
			got := new(gatewayv1.InvokeToolResponse)
			if err := proto.Unmarshal(invokewire.ToolResponse(enc, tc.repairs, false), got); err != nil {
				t.Fatal(err)
			}
			want := &gatewayv1.InvokeToolResponse{Result: backend.Result, IsError: true, Repairs: repairsProto(tc.repairs)}
			if !proto.Equal(got, want) {
				t.Errorf("decoded %v, want %v (%s)", got, want, tc.reason)
			}
			if len(got.ProtoReflect().GetUnknown()) != 0 {
				t.Errorf("unknown fields in the response (%s)", tc.reason)
			}
		})
	}
}
