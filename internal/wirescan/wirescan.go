// Package wirescan reads protobuf tags and length-delimited fields with a
// fast path for the common case of google.protobuf.Struct bytes: a one-byte
// tag (field numbers 1–15) and a one-byte length (under 128 bytes). Every
// other input takes protowire's own functions, so the results are always
// protowire's. The hot path's wire checks (normalize.Plan.NeedsRepairWire,
// registry.Entry.FastValidWire) call these for every key and value; written
// by hand because protowire's general functions decode a varint through a
// call even for one byte.
package wirescan

import "google.golang.org/protobuf/encoding/protowire"

// ConsumeTag is protowire.ConsumeTag.
func ConsumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0]-1<<3 < 0x80-1<<3 { // 8 ≤ b[0] < 0x80: field 1–15 in one byte
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// ConsumeBytes is protowire.ConsumeBytes.
func ConsumeBytes(b []byte) ([]byte, int) {
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) { // one-byte length, payload present
		return b[1 : 1+b[0]], 1 + int(b[0])
	}
	return protowire.ConsumeBytes(b)
}
