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
		if at, dup := duplicateKeyAt(raw); dup {
			return nil, fmt.Errorf("the key at %s appears more than once in its object", at)
		}
	}
	return s, nil
}

// duplicateKeyAt is the RFC 6901 pointer of the first member of valid JSON
// text whose key its object already has (keys compared decoded, so "a"
// and "\u0061" are one key). It allocates per token: only a text whose
// member count gave a duplicate away, or was not counted, is searched.
func duplicateKeyAt(raw []byte) (string, bool) {
	type container struct {
		object bool
		seen   map[string]bool
		key    bool   // an object expects a key next
		seg    string // the pointer segment of the member or element being read
		index  int    // an array's next element
	}
	var stack []*container
	pointer := func(last string) string {
		var b strings.Builder
		for _, c := range stack[:len(stack)-1] {
			b.WriteString("/" + c.seg)
		}
		return b.String() + "/" + last
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *container
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			k, ok := tok.(string)
			if !ok { // the object's '}'
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].key = true
				}
				continue
			}
			if top.seen[k] {
				return pointer(escapePointer(k)), true
			}
			top.seen[k], top.key, top.seg = true, false, escapePointer(k)
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if top != nil && !top.object {
				top.seg = strconv.Itoa(top.index)
				top.index++
			}
			stack = append(stack, &container{object: tok == json.Delim('{'), seen: map[string]bool{}, key: true})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].key = true
			}
		default: // a scalar: a member's value or an element
			if top != nil && top.object {
				top.key = true
			} else if top != nil {
				top.index++
			}
		}
	}
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
