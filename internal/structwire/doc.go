// Package structwire reads the wire bytes of google.protobuf.Struct, Value
// and ListValue (struct.proto) without decoding them: the field numbers, one
// reader each for a map entry, a list item and a Value, with the checks
// proto.Unmarshal makes (one kind per Value, one key and one value per
// entry, valid UTF-8, no unknown fields). It is the one reader behind the
// hot path's wire checks (normalize.Plan.NeedsRepairWire and the schema
// fast path); every function allocates nothing. DecodeStruct and
// DecodeValue build on them: a hand decoder into structpb, equal to
// proto.Unmarshal for the bytes it takes, for arguments that must be
// decoded (a repair, a rule reading members).
//
// ConsumeTag and ConsumeBytes take a fast path for the common case — a
// one-byte tag (field numbers 1–15) and a one-byte length (under 128
// bytes) — and protowire's own functions otherwise, so their results are
// always protowire's. Written by hand because protowire's general
// functions decode a varint through a call even for one byte.
//
// The package imports protowire, structpb and the standard library only,
// so normalize and the schema engine stay pure.
package structwire
