package invokewire

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flowdrop/gateway/normalize"
)

// Repair's fields (tool.proto).
const (
	repairPathField     protowire.Number = 1
	repairKindField     protowire.Number = 2
	repairPassesField   protowire.Number = 3
	repairBoundHitField protowire.Number = 4
)

// RepairKind is the flowdrop.gateway.v1.RepairKind number of a repair kind
// (0, REPAIR_KIND_UNSPECIFIED, for a kind the proto does not name): the one
// mapping, which the gRPC face's Repair messages use too.
func RepairKind(k normalize.RepairKind) int32 {
	switch k {
	case normalize.JSONDecoded:
		return 1 // REPAIR_KIND_JSON_DECODED
	case normalize.EntitiesDecoded:
		return 2 // REPAIR_KIND_ENTITIES_DECODED
	case normalize.NullDropped:
		return 3 // REPAIR_KIND_NULL_DROPPED
	}
	return 0
}

// ToolResponse is the InvokeToolResponse for an encoded InvokeResponse
// (a backend's, or a stored one), the call's repairs and its replay mark:
// resp itself when there are neither, else a copy with repairs (3) and
// replayed (4) appended. Decoded, it equals the InvokeToolResponse
// proto.Marshal would build; its bytes are proto.Marshal's too unless resp
// holds content (5) or meta (6), which then come before the repairs.
func ToolResponse(resp []byte, repairs []normalize.Repair, replayed bool) []byte {
	if len(repairs) == 0 && !replayed {
		return resp
	}
	b := resp[:len(resp):len(resp)] // full: appending copies
	for _, r := range repairs {
		b = appendRepair(b, r)
	}
	if replayed {
		b = protowire.AppendVarint(protowire.AppendTag(b, replayedField, protowire.VarintType), 1)
	}
	return b
}

// appendRepair appends one InvokeToolResponse.repairs element as
// proto.Marshal encodes it: the zero values left out (proto3).
func appendRepair(b []byte, r normalize.Repair) []byte {
	kind, passes := RepairKind(r.Kind), int32(r.Passes)
	size := 0
	if r.Path != "" {
		size += 1 + protowire.SizeBytes(len(r.Path))
	}
	if kind != 0 {
		size += 1 + protowire.SizeVarint(uint64(kind))
	}
	if passes != 0 {
		size += 1 + protowire.SizeVarint(uint64(passes))
	}
	if r.BoundHit {
		size += 2
	}
	b = protowire.AppendTag(b, repairsField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if r.Path != "" {
		b = protowire.AppendString(protowire.AppendTag(b, repairPathField, protowire.BytesType), r.Path)
	}
	if kind != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, repairKindField, protowire.VarintType), uint64(kind))
	}
	if passes != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, repairPassesField, protowire.VarintType), uint64(passes))
	}
	if r.BoundHit {
		b = protowire.AppendVarint(protowire.AppendTag(b, repairBoundHitField, protowire.VarintType), 1)
	}
	return b
}

// streamResultField is InvokeToolStreamResponse's result (gateway.proto).
const streamResultField protowire.Number = 2

// StreamResult is the InvokeToolStreamResponse whose result is the encoded
// InvokeToolResponse resp (ToolResponse's): resp as one length-delimited
// field, as proto.Marshal encodes it. It copies resp once.
func StreamResult(resp []byte) []byte {
	b := make([]byte, 0, 1+protowire.SizeVarint(uint64(len(resp)))+len(resp))
	return protowire.AppendBytes(protowire.AppendTag(b, streamResultField, protowire.BytesType), resp)
}
