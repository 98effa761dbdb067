package schema

import (
	"maps"
	"slices"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"
)

// A google.protobuf.Struct can carry NaN and ±Infinity (number_value is a
// double); JSON cannot. No schema can mean them — JSON Schema is defined
// over JSON values, and jsonschema lets them through wherever a schema does
// not constrain the value — and a backend that re-encodes its arguments as
// JSON fails on them (protojson refuses them). So Validate refuses them
// everywhere, before the schema, and the wire checks never pass them.

// nonFiniteViolations returns a violation for each NaN or ±Infinity number
// in args, in document order for lists and key order for objects, so the
// message is stable. Arguments without any cost one allocation-free walk.
func nonFiniteViolations(args *structpb.Struct, sens *Sensitivity) []Violation {
	if structFinite(args) {
		return nil
	}
	var out []Violation
	var path []string
	var isArr []bool
	var walk func(v *structpb.Value)
	walk = func(v *structpb.Value) {
		switch k := v.GetKind().(type) {
		case *structpb.Value_NumberValue:
			if !finite(k.NumberValue) {
				got := "; got " + strconv.FormatFloat(k.NumberValue, 'g', -1, 64) + ", which JSON cannot express"
				if sens.At(path, isArr) {
					got = " (JSON cannot express NaN or infinities)"
				}
				out = append(out, Violation{Pointer: pointer(path), Message: fieldName(path, isArr) + " must be a finite number" + got, Keyword: "finite"})
			}
		case *structpb.Value_StructValue:
			fields := k.StructValue.GetFields()
			for _, name := range slices.Sorted(maps.Keys(fields)) {
				path, isArr = append(path, name), append(isArr, false)
				walk(fields[name])
				path, isArr = path[:len(path)-1], isArr[:len(isArr)-1]
			}
		case *structpb.Value_ListValue:
			for i, e := range k.ListValue.GetValues() {
				path, isArr = append(path, strconv.Itoa(i)), append(isArr, true)
				walk(e)
				path, isArr = path[:len(path)-1], isArr[:len(isArr)-1]
			}
		}
	}
	walk(structpb.NewStructValue(args))
	return out
}

func structFinite(s *structpb.Struct) bool {
	for _, f := range s.GetFields() {
		if !valueFinite(f) {
			return false
		}
	}
	return true
}

func valueFinite(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return finite(k.NumberValue)
	case *structpb.Value_StructValue:
		return structFinite(k.StructValue)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			if !valueFinite(e) {
				return false
			}
		}
	}
	return true
}
