package invokewire_test

import (
	"math/rand/v2"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/normalize"
)

// Random messages for the property tests: every field set or not, strings
// across the varint length boundaries and outside ASCII, values of every
// kind nested a few levels.

func randString(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("x", 100+r.IntN(300)) // two length bytes
	case 2:
		return []string{"é", "€uro", "😀", "\u2028k"}[r.IntN(4)] // multi-byte UTF-8
	}
	const letters = "abcdefghijklmnopqrstuvwxyz_-./0123456789 "
	b := make([]byte, r.IntN(20))
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

func randValue(r *rand.Rand, depth int) *structpb.Value {
	n := 6
	if depth <= 0 {
		n = 4
	}
	switch r.IntN(n) {
	case 0:
		return structpb.NewNullValue()
	case 1:
		return structpb.NewNumberValue(r.NormFloat64() * 1e6)
	case 2:
		return structpb.NewStringValue(randString(r))
	case 3:
		return structpb.NewBoolValue(r.IntN(2) == 0)
	case 4:
		return structpb.NewStructValue(randStruct(r, depth-1))
	}
	l := &structpb.ListValue{}
	for range r.IntN(5) {
		l.Values = append(l.Values, randValue(r, depth-1))
	}
	return structpb.NewListValue(l)
}

func randStruct(r *rand.Rand, depth int) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for range r.IntN(6) {
		s.Fields[randString(r)] = randValue(r, depth)
	}
	return s
}

// maybeValue is a random result, or none.
func maybeValue(r *rand.Rand) *structpb.Value {
	if r.IntN(4) == 0 {
		return nil
	}
	return randValue(r, 3)
}

func randRepairs(r *rand.Rand) []normalize.Repair {
	var rs []normalize.Repair
	for range r.IntN(4) {
		rs = append(rs, normalize.Repair{Path: randString(r), Kind: normalize.RepairKind(r.IntN(5)),
			Passes: []int{0, 1, 300, -1, 1 << 20}[r.IntN(5)], BoundHit: r.IntN(2) == 0})
	}
	return rs
}

func randContent(r *rand.Rand) []*gatewayv1.ContentBlock {
	var cs []*gatewayv1.ContentBlock
	for range r.IntN(3) {
		cs = append(cs, &gatewayv1.ContentBlock{Block: &gatewayv1.ContentBlock_Text{Text: &gatewayv1.TextContent{Text: randString(r)}}})
	}
	return cs
}

func randMeta(r *rand.Rand) *structpb.Struct {
	if r.IntN(2) == 0 {
		return nil
	}
	return randStruct(r, 1)
}

// repairKinds is normalize's repair kinds as the proto names them, written
// out here so the tests do not check RepairKind against itself; a kind
// missing is REPAIR_KIND_UNSPECIFIED.
var repairKinds = map[normalize.RepairKind]gatewayv1.RepairKind{
	normalize.JSONDecoded:     gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED,
	normalize.EntitiesDecoded: gatewayv1.RepairKind_REPAIR_KIND_ENTITIES_DECODED,
	normalize.NullDropped:     gatewayv1.RepairKind_REPAIR_KIND_NULL_DROPPED,
}

// repairsProto is the repairs as Repair messages.
func repairsProto(rs []normalize.Repair) []*gatewayv1.Repair {
	var out []*gatewayv1.Repair
	for _, r := range rs {
		out = append(out, &gatewayv1.Repair{Path: r.Path, Kind: repairKinds[r.Kind], Passes: int32(r.Passes), BoundHit: r.BoundHit})
	}
	return out
}
