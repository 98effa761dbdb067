package normalize_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/normalize"
)

func TestParseArguments(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 5) + "1" + strings.Repeat("}", 5)
	cases := []struct {
		name, reason, text string
		lim                normalize.Limits
		wantKeys           int                  // parsed: the top-level keys
		wantReason         normalize.SkipReason // refused: the reason (0: a limit)
		wantLimit          normalize.LimitKind
		wantPath           string
		wantMsg            string // refused: a part of the message
	}{
		{name: "object", reason: "an ordinary tool call's arguments parse",
			text: ` {"title":"x","tags":"[\"a\"]","n":1.5} `, wantKeys: 3},
		{name: "empty-object", reason: "a tool without parameters", text: `{}`},
		{name: "lossy-number", reason: "2^53+1 rounds to 2^53 in a float64: refused, naming where",
			text: `{"id":9007199254740993}`, wantReason: normalize.LossyNumber, wantPath: "/id", wantMsg: "send it as a string"},
		{name: "lossy-number-nested", reason: "the pointer names list indexes and escapes keys",
			text: `{"a/b":[0,{"x":1e400}]}`, wantReason: normalize.LossyNumber, wantPath: "/a~1b/1/x"},
		{name: "duplicate-key", reason: "last-one-wins would lose a value the model sent",
			text: `{"o":{"k":1,"\u006b":2}}`, wantReason: normalize.DuplicateKey, wantPath: "/o/k"},
		{name: "lone-surrogate", reason: "U+FFFD would be invented",
			text: `{"s":["\ud800"]}`, wantReason: normalize.LoneSurrogate, wantPath: "/s/0", wantMsg: `the string at /s/0 holds \ud800, an unpaired`},
		{name: "lone-surrogate-key", reason: "keys are text too: named as the key of the object at the path",
			text: `{"o":{"\udc00":1}}`, wantReason: normalize.LoneSurrogate, wantPath: "/o", wantMsg: `the key at /o holds \udc00`},
		{name: "invalid-utf8", reason: "JSON text is UTF-8: the string holding the byte is named",
			text: "{\"s\":[\"ok\",\"\xff\"]}", wantReason: normalize.NotJSON, wantPath: "/s/1", wantMsg: "the string at /s/1 is not valid UTF-8 (at byte 12)"},
		{name: "invalid-utf8-key", reason: "a key is named as the key of its object",
			text: "{\"a\":{\"k\xc3\":1}}", wantReason: normalize.NotJSON, wantPath: "/a", wantMsg: "the key at /a is not valid UTF-8"},
		{name: "invalid-utf8-outside-strings", reason: "a byte outside any string has no path: its offset says where",
			text: "{\"a\":\xff}", wantReason: normalize.NotJSON, wantMsg: "arguments is not valid UTF-8 (at byte 5)"},
		{name: "bare-string", reason: "a model that answered with a string gets told the shape",
			text: `"create a note"`, wantReason: normalize.WrongShape, wantMsg: "must be a JSON object; got a string"},
		{name: "array", reason: "an array is not an arguments object",
			text: `[1,2]`, wantReason: normalize.WrongShape, wantMsg: "got an array"},
		{name: "empty", reason: "nothing at all", text: `  `, wantReason: normalize.NotJSON, wantMsg: "ends after 2 bytes"},
		{name: "truncated", reason: "a response cut off at max_tokens names where it stopped",
			text: `{"title":"x","tags":["a",`, wantReason: normalize.NotJSON, wantPath: "/tags/1", wantMsg: "cut off"},
		{name: "truncated-in-a-string", reason: "cut off inside a string value: still told it is cut off",
			text: `{"title":"Quarter`, wantReason: normalize.NotJSON, wantPath: "/title", wantMsg: "ends after 17 bytes"},
		{name: "trailing", reason: "two objects glued together", text: `{}{}`, wantReason: normalize.NotJSON, wantMsg: "after the arguments object"},
		{name: "depth-limit", reason: "the policy depth counts the arguments object as 1",
			text: deep, lim: normalize.Limits{MaxDepth: 3}, wantLimit: normalize.LimitDepth, wantPath: "/a/a/a"},
		{name: "keys-limit", reason: "the key count stops the parse at the key that crossed it",
			text: `{"a":1,"b":2,"c":3}`, lim: normalize.Limits{MaxKeys: 2}, wantLimit: normalize.LimitKeys, wantPath: "/c"},
		{name: "string-limit", reason: "an over-long string value is refused at its path",
			text: `{"a":"0123456789"}`, lim: normalize.Limits{MaxStringLength: 4}, wantLimit: normalize.LimitStringLength, wantPath: "/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := normalize.ParseArguments(tc.text, tc.lim)
			if tc.wantReason == 0 && tc.wantLimit == 0 {
				if err != nil {
					t.Fatalf("error %v (%s)", err, tc.reason)
				}
				if len(s.GetFields()) != tc.wantKeys || s == nil {
					t.Fatalf("parsed %v, want %d keys (%s)", s, tc.wantKeys, tc.reason)
				}
				return
			}
			if tc.wantLimit != 0 {
				var le *normalize.LimitError
				if !errors.As(err, &le) || le.Kind != tc.wantLimit || le.Path != tc.wantPath {
					t.Fatalf("error %#v, want limit %v at %q (%s)", err, tc.wantLimit, tc.wantPath, tc.reason)
				}
				return
			}
			var pe *normalize.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError (%s)", err, tc.reason)
			}
			if pe.Reason != tc.wantReason || pe.Path != tc.wantPath {
				t.Errorf("reason %v at %q, want %v at %q (%s)", pe.Reason, pe.Path, tc.wantReason, tc.wantPath, tc.reason)
			}
			if !strings.Contains(pe.Error(), tc.wantMsg) {
				t.Errorf("message %q lacks %q (%s)", pe.Error(), tc.wantMsg, tc.reason)
			}
		})
	}
}

// BenchmarkParseArguments: a model's arguments text (the recorded OpenAI
// call's shape) parsed within the default policy limits.
func BenchmarkParseArguments(b *testing.B) {
	text := `{"id":9007199254740992,"title":"Quarterly report","tags":"[\"finance\",\"q3\"]","body":"Revenue grew 4% over the quarter."}`
	lim := normalize.Limits{MaxBytes: 4 << 20, MaxStringLength: 1 << 20, MaxDepth: 100, MaxElements: 50_000, MaxKeys: 10_000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := normalize.ParseArguments(text, lim); err != nil {
			b.Fatal(err)
		}
	}
}
