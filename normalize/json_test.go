package normalize

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestParseStrictJSON(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1) }
	cases := []struct {
		reason string
		in     string
		want   SkipReason // 0 = accepted
	}{
		{"empty string is not JSON", "", NotJSON},
		{"only whitespace is not JSON", " \t\n", NotJSON},
		{"scalar top-level values are JSON (shape is checked later)", `"x"`, 0},
		{"whitespace around the value is allowed", "\r\n [1] \t", 0},
		{"non-JSON whitespace (NBSP) is not allowed", "\u00a0[1]", NotJSON},
		{"trailing garbage", `[1]x`, NotJSON},
		{"two values", `[1] [2]`, NotJSON},
		{"single quotes", `['a']`, NotJSON},
		{"unquoted key", `{a:1}`, NotJSON},
		{"trailing comma in object", `{"a":1,}`, NotJSON},
		{"leading zero", `[01]`, NotJSON},
		{"bare minus", `[-]`, NotJSON},
		{"dot without digits", `[1.]`, NotJSON},
		{"exponent without digits", `[1e]`, NotJSON},
		{"plus sign", `[+1]`, NotJSON},
		{"NaN", `[NaN]`, NotJSON},
		{"Infinity", `[Infinity]`, NotJSON},
		{"hex number", `[0x10]`, NotJSON},
		{"raw control character in a string", "[\"a\tb\"]", NotJSON},
		{"bad escape", `["\x"]`, NotJSON},
		{"short \\u escape", `["\u12"]`, NotJSON},
		{"unterminated string", `["abc`, NotJSON},
		{"comment", `[1 /* c */]`, NotJSON},
		{"invalid UTF-8", "[\"\xff\"]", NotJSON},
		{"truncated literal", `[tru]`, NotJSON},
		{"valid surrogate pair", `["\ud83d\ude00"]`, 0},
		{"lone high surrogate", `["\ud800"]`, LoneSurrogate},
		{"lone low surrogate", `["\udc00"]`, LoneSurrogate},
		{"high surrogate followed by a non-surrogate escape", `["\ud800\u0041"]`, LoneSurrogate},
		{"escaped NUL is fine", `["\u0000"]`, 0},
		{"0.1 round-trips", `[0.1]`, 0},
		{"9007199254740992 (2^53) is exact", `[9007199254740992]`, 0},
		{"9007199254740993 is not", `[9007199254740993]`, LossyNumber},
		{"1e400 overflows", `[1e400]`, LossyNumber},
		{"-1e400 overflows", `[-1e400]`, LossyNumber},
		{"1e-400 underflows to 0", `[1e-400]`, LossyNumber},
		{"1e2 equals 100", `[1e2]`, 0},
		{"1.0 equals 1", `[1.0]`, 0},
		{"1E+2 equals 100", `[1E+2]`, 0},
		{"-0 is carried (float64 has a negative zero)", `[-0]`, 0},
		{"0.0e-5 is zero", `[0.0e-5]`, 0},
		{"0.30000000000000004 round-trips", `[0.30000000000000004]`, 0},
		{"0.3000000000000000444 does not equal the shortest form", `[0.3000000000000000444]`, LossyNumber},
		{"1.7976931348623157e308 is max float64", `[1.7976931348623157e308]`, 0},
		{"5e-324 is the smallest subnormal", `[5e-324]`, 0},
		{"huge exponent does not overflow the checker", `[1e99999999999999999999999]`, LossyNumber},
		{"long mantissa of zeros", "[" + strings.Repeat("0", 1) + "." + strings.Repeat("0", 500) + "1]", LossyNumber},
		{"duplicate key", `{"a":1,"a":1}`, DuplicateKey},
		{"duplicate key deep inside", `[[{"x":[{"b":1,"c":2,"b":3}]}]]`, DuplicateKey},
		{"same key in sibling objects is fine", `[{"a":1},{"a":2}]`, 0},
		{"depth 100 of arrays", deep(100), 0},
		{"depth 101 of arrays", deep(101), TooDeep},
		{"depth 100 of objects", deepObj(100), 0},
		{"depth 101 of objects", deepObj(101), TooDeep},
		{"very deep input does not blow the stack", deep(1_000_000), TooDeep},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, got, _ := parseStrictJSON(tc.in)
			if got != tc.want {
				t.Errorf("parseStrictJSON(%.60q) reason = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseStrictJSONValues(t *testing.T) {
	v, r, _ := parseStrictJSON(`{"s":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","n":[-0,1e2,0.5],"t":true,"f":false,"z":null,"o":{},"l":[]}`)
	if r != 0 {
		t.Fatalf("rejected: %v", r)
	}
	want, _ := structpb.NewValue(map[string]any{
		"s": "a\"\\/\b\f\n\r\té😀",
		"n": []any{math.Copysign(0, -1), 100.0, 0.5},
		"t": true, "f": false, "z": nil,
		"o": map[string]any{}, "l": []any{},
	})
	if !proto.Equal(v, want) {
		t.Errorf("got %v\nwant %v", v, want)
	}
	if n := v.GetStructValue().Fields["n"].GetListValue().Values[0].GetNumberValue(); !math.Signbit(n) {
		t.Errorf("-0 lost its sign")
	}
}

// checkAgainstEncodingJSON is the differential property used by the tests
// and the fuzzer: whatever we accept, encoding/json accepts with the same
// value; whatever encoding/json rejects, we reject.
func checkAgainstEncodingJSON(t *testing.T, in string) {
	v, reason, _ := parseStrictJSON(in)
	valid := json.Valid([]byte(in))
	if reason == 0 {
		if !valid {
			t.Fatalf("accepted %q, which encoding/json rejects", in)
		}
		var x any
		if err := json.Unmarshal([]byte(in), &x); err != nil {
			t.Fatalf("accepted %q, encoding/json: %v", in, err)
		}
		want, err := structpb.NewValue(x)
		if err != nil {
			t.Fatalf("structpb.NewValue: %v", err)
		}
		if !proto.Equal(v, want) {
			t.Fatalf("value of %q: got %v, encoding/json gives %v", in, v, want)
		}
		return
	}
	// encoding/json accepts invalid UTF-8 (replacing it with U+FFFD); RFC 8259 does not.
	if reason == NotJSON && valid && utf8.ValidString(in) {
		t.Fatalf("rejected %q as not JSON, which encoding/json accepts", in)
	}
}

func TestParseStrictJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{`[1,2,{"a":"b"}]`, `{"a":[true,false,null]}`, `"\u00e9"`, `[1.5e3]`, `{}`, `[]`, `[-0.0]`, `{"a":{"b":{"c":"d"}}}`} {
		t.Run(in, func(t *testing.T) { checkAgainstEncodingJSON(t, in) })
	}
}

func FuzzParseStrictJSON(f *testing.F) {
	for _, s := range []string{`[1,2]`, `{"a":"b"}`, `"\ud800"`, `[9007199254740993]`, `{"a":1,"a":2}`, `[0.1,1e2,-0]`, "[\"\xff\"]", ` {"x" : [ ] } `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { checkAgainstEncodingJSON(t, fuzzInput(in)) })
}

func TestSameDecimal(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"1", "1", true}, {"1.0", "1", true}, {"1e2", "100", true}, {"100", "1e+02", true},
		{"0.001", "1e-03", true}, {"-0", "-0", true}, {"0", "-0", false}, {"0.10", "0.1", true},
		{"9007199254740993", "9.007199254740992e+15", false}, {"12.5e-1", "1.25", true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s=%s", tc.a, tc.b), func(t *testing.T) {
			if got := sameDecimal(tc.a, tc.b); got != tc.want {
				t.Errorf("sameDecimal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
