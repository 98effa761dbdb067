package toolcodec

import (
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
func decodeStruct(raw []byte) (*structpb.Struct, error) {
	if s, err := normalize.ParseArguments(string(raw), normalize.Limits{}); err == nil {
		return s, nil
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, s); err != nil {
		return nil, err
	}
	return s, nil
}
