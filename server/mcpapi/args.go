package mcpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
)

// parseMCPArguments turns tools/call arguments (raw JSON) into a Struct.
// Absent or null means no arguments. A number that float64 (the Struct's
// number type) cannot hold as written is refused, naming it, rather than
// silently changed before the tool sees it; so is an object with a
// duplicate key, which encoding/json would resolve by keeping the last
// (what was validated must be what any reader of the text would see).
// members is scanArgumentLimits's count of the text's object members: the
// decoded objects holding fewer means a key was repeated (-1: not known,
// the text is searched for one).
func parseMCPArguments(raw json.RawMessage, members int) (*structpb.Struct, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return &structpb.Struct{Fields: map[string]*structpb.Value{}}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not valid JSON: data after the arguments object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON object, got %s", jsonKind(v))
	}
	decoded := len(obj)
	s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(obj))}
	for k, x := range obj {
		val, err := toValue(x, "/"+escapePointer(k), &decoded)
		if err != nil {
			return nil, err
		}
		s.Fields[k] = val
	}
	if decoded != members {
		if err := duplicateKey(raw, members); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// duplicateKey is the refusal of arguments whose objects decoded to fewer
// members than the text has, located by the strict parser (which judges
// keys decoded, so "a" and "\u0061" are one key); members < 0 (not
// counted) refuses only what the parser finds. Only such texts are parsed
// twice.
func duplicateKey(raw []byte, members int) error {
	_, err := normalize.ParseArguments(string(raw), normalize.Limits{})
	if pe, ok := err.(*normalize.ParseError); ok && pe.Reason == normalize.DuplicateKey {
		return errors.New(strings.TrimPrefix(pe.Describe(""), ": "))
	}
	if members < 0 {
		return nil
	}
	// The counts prove a repeat the parser stopped short of (it refused
	// something else first, e.g. nesting past its own depth bound).
	return errors.New("a key appears more than once in one of its objects")
}

// toValue converts a decoded JSON value, adding the members of the objects
// in it to members.
func toValue(x any, at string, members *int) (*structpb.Value, error) {
	switch x := x.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case bool:
		return structpb.NewBoolValue(x), nil
	case string:
		return structpb.NewStringValue(x), nil
	case json.Number:
		f, err := exactFloat(string(x))
		if err != nil {
			return nil, fmt.Errorf("the number at %s %v", at, err)
		}
		return structpb.NewNumberValue(f), nil
	case []any:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(x))}
		for i, e := range x {
			v, err := toValue(e, at+"/"+strconv.Itoa(i), members)
			if err != nil {
				return nil, err
			}
			l.Values[i] = v
		}
		return structpb.NewListValue(l), nil
	case map[string]any:
		*members += len(x)
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(x))}
		for k, e := range x {
			v, err := toValue(e, at+"/"+escapePointer(k), members)
			if err != nil {
				return nil, err
			}
			s.Fields[k] = v
		}
		return structpb.NewStructValue(s), nil
	}
	return nil, fmt.Errorf("value at %s: unsupported JSON type %T", at, x)
}

// exactFloat parses a JSON number literal, refusing one whose float64 is
// not the same number (e.g. 12345678901234567891 or 1e400): the value
// survives only if the shortest float64 formatting denotes the literal's
// exact decimal value. Its errors never quote the number: the schema that
// says whether the field is sensitive is not consulted here.
func exactFloat(lit string) (float64, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return 0, errors.New("is out of range for a 64-bit float")
	}
	want, ok1 := new(big.Rat).SetString(lit)
	got, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok1 || !ok2 || want.Cmp(got) != 0 {
		return 0, errors.New("cannot be represented exactly as a 64-bit float; send it as a string")
	}
	return f, nil
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}
