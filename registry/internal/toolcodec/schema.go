package toolcodec

import (
	"unsafe"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
)

// decodeStruct reads a stored schema (protojson of a google.protobuf.Struct).
//
// protojson's reflective decoder was most of a cold load's CPU (about 160 µs
// and 700 allocations for a ~10-parameter schema; BENCHMARKS.md, "Registry
// at 100,000 tools"), so the gateway's strict JSON parser, which builds
// structpb directly, reads it first. It accepts a subset of what protojson
// accepts (it also refuses a number a float64 cannot hold exactly and a lone
// surrogate escape) and builds the same Struct
// (TestDecodeStructMatchesProtojson, FuzzDecodeStruct); whatever it refuses
// goes to protojson, so what is accepted, refused and the error stay
// protojson's.
//
// raw is read in place, not copied: the parser's strings are substrings of
// its input, so the Struct keeps raw alive instead of a copy of it. Every
// caller passes bytes of its own that nothing writes afterwards (a
// json.RawMessage encoding/json copied out of the record).
func decodeStruct(raw []byte) (*structpb.Struct, error) {
	if len(raw) > 0 {
		if s, err := normalize.ParseArguments(unsafe.String(&raw[0], len(raw)), normalize.Limits{}); err == nil {
			return s, nil
		}
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, s); err != nil {
		return nil, err
	}
	return s, nil
}
