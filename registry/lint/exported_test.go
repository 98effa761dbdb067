package lint_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry/lint"
)

// TestLintExported: an error the profile's export rewrite repairs is a
// warning; one it does not stays an error — so errors in a profile mean
// exactly that its export leaves the tool out.
func TestLintExported(t *testing.T) {
	cases := []struct {
		reason  string
		profile lint.Profile
		schema  string
		// errors and repaired ("path rule"), in walk order.
		errors, repaired []string
	}{
		{reason: "Gemini: additionalProperties false and $schema are dropped by the export", profile: lint.Gemini,
			schema:   `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`,
			repaired: []string{"/$schema gemini-unsupported-keyword", "/additionalProperties gemini-unsupported-keyword"}},
		{reason: "Gemini: a [T, null] type list becomes nullable", profile: lint.Gemini,
			schema:   `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
			repaired: []string{"/properties/a/type gemini-type-list"}},
		{reason: "Gemini: a 64-bit integer's [integer, string] becomes anyOf", profile: lint.Gemini,
			schema:   `{"type":"object","properties":{"id":{"type":["integer","string"],"pattern":"^[0-9]+$"}}}`,
			repaired: []string{"/properties/id/type gemini-type-list"}},
		{reason: "Gemini: contentEncoding is an annotation the export drops", profile: lint.Gemini,
			schema:   `{"type":"object","properties":{"b":{"type":"string","contentEncoding":"base64"}}}`,
			repaired: []string{"/properties/b/contentEncoding gemini-unsupported-keyword"}},
		{reason: "Gemini: an exclusive bound is a constraint no rewrite keeps: still an error", profile: lint.Gemini,
			schema: `{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0}}}`,
			errors: []string{"/properties/n/exclusiveMinimum gemini-unsupported-keyword"}},
		{reason: "Gemini: a map's additionalProperties schema is a constraint: still an error", profile: lint.Gemini,
			schema: `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`,
			errors: []string{"/properties/m/additionalProperties gemini-unsupported-keyword"}},
		{reason: "openai-strict: the strict rewrite adds additionalProperties false and required", profile: lint.OpenAIStrict,
			schema:   `{"type":"object","properties":{"a":{"type":"string"}}}`,
			repaired: []string{" strict-additional-properties", "/properties/a strict-required"}},
		{reason: "OpenAI has no rewrite: an array without items stays an error", profile: lint.OpenAI,
			schema: `{"type":"object","properties":{"l":{"type":"array"}}}`,
			errors: []string{"/properties/l array-items-required"}},
	}
	for _, c := range cases {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.schema), &m); err != nil {
			t.Fatal(err)
		}
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		var errs, repaired []string
		for _, f := range lint.LintExported("t", s, c.profile) {
			switch {
			case f.Severity == lint.SeverityError:
				errs = append(errs, f.Path+" "+f.Rule)
			case strings.HasSuffix(f.Message, lint.RepairedSuffix):
				repaired = append(repaired, f.Path+" "+f.Rule)
			}
		}
		if fmt.Sprint(errs) != fmt.Sprint(c.errors) || fmt.Sprint(repaired) != fmt.Sprint(c.repaired) {
			t.Errorf("%s:\n errors %v, want %v\n repaired %v, want %v", c.reason, errs, c.errors, repaired, c.repaired)
		}
	}
}
