package sdkjson

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name, data string
		ok         bool
		reason     string
	}{
		{"at the bound", nest(MaxDepth), true, "the SDK accepts exactly MaxDepth levels"},
		{"one past", nest(MaxDepth + 1), false, "one level more is refused before decoding"},
		{"brackets in a string", `"` + strings.Repeat("[", MaxDepth+5) + `"`, true, "string contents are not nesting"},
		{"escaped quote", `["\"` + strings.Repeat("{", MaxDepth+5) + `"]`, true, "an escaped quote does not end the string"},
	} {
		err := CheckDepth([]byte(tc.data))
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrMaxDepth)) {
			t.Errorf("%s: CheckDepth = %v, want ok=%v (%s)", tc.name, err, tc.ok, tc.reason)
		}
	}
}

func TestUnmarshalIsCaseSensitive(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	if err := Unmarshal([]byte(`{"NAME":"x"} trailing`), &v); err != nil || v.Name != "" {
		t.Fatalf("Unmarshal = %v, %q; want no match for a differently cased key and trailing bytes ignored, as the SDK", err, v.Name)
	}
	if err := Unmarshal([]byte(strings.Repeat("[", MaxDepth+1)), &v); !errors.Is(err, ErrMaxDepth) {
		t.Fatalf("Unmarshal of deep nesting = %v; want ErrMaxDepth", err)
	}
}
