package mcpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/policy"
)

// TestDuplicateKeysAreRefused: an object member whose key its object
// already has (compared decoded) is refused naming where, at any depth; the
// same key in different objects, or text the limit scan did not count, is
// judged the same way.
func TestDuplicateKeysAreRefused(t *testing.T) {
	lim := policy.Limits{}.WithDefaults()
	for _, tc := range []struct {
		name, reason, raw, wantAt string
	}{
		{"top", "the last of two would win in encoding/json", `{"a":1,"a":2}`, "/a"},
		{"escaped", "\\u0061 is the key a", `{"a":1,"\u0061":2}`, "/a"},
		{"nested", "inside an object in a list", `{"x":[1,{"k":true,"k":false}]}`, "/x/1/k"},
		{"pointer escapes", "the key is escaped in the pointer", `{"a/b":{"~":1,"~":2}}`, "/a~1b/~0"},
		{"after a list", "state survives a closed list", `{"l":[[],{}],"m":{"q":1},"l":0}`, "/l"},
		{"distinct", "the same key in two objects is fine", `{"a":{"k":1},"b":{"k":1}}`, ""},
		{"empty", "no members", `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			members, err := scanArgumentLimits("t", []byte(tc.raw), lim)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []int{members, -1} { // counted, and not counted
				_, err := parseMCPArguments(json.RawMessage(tc.raw), m)
				switch {
				case tc.wantAt == "" && err != nil:
					t.Errorf("members %d: %v; want it parsed (%s)", m, err, tc.reason)
				case tc.wantAt != "" && (err == nil || !strings.Contains(err.Error(), "key at "+tc.wantAt+" appears more than once")):
					t.Errorf("members %d: %v; want the key at %s refused (%s)", m, err, tc.wantAt, tc.reason)
				}
			}
		})
	}
}
