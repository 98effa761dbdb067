package schema

import (
	"errors"
	"slices"
	"testing"
)

// TestValidateErrorKinds: invalid arguments are a *ValidationError; a
// schema fault that shows only at validation time (a $ref cycle that never
// descends into the instance) is a *RuntimeError, not a violation.
func TestValidateErrorKinds(t *testing.T) {
	const cycle = `{"type":"object","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`
	cases := []struct {
		reason  string
		schema  string
		args    string
		wantErr any // nil, *ValidationError or *RuntimeError
	}{
		{reason: "valid arguments", schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`, args: `{"n":1}`},
		{reason: "a wrong type is the caller's to fix", schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`, args: `{"n":"1"}`, wantErr: (*ValidationError)(nil)},
		{reason: "a cycle that never descends is the engine's failure", schema: cycle, args: `{"x":1}`, wantErr: (*RuntimeError)(nil)},
		{reason: "a branch beside the cycle that matches decides", schema: cycle, args: `{"x":"s"}`},
	}
	for _, c := range cases {
		for _, opts := range [][]Option{nil, {WithoutFastPaths()}} {
			s := fastEntry(t, c.schema)
			if opts != nil {
				s = compileJSON(t, c.schema, opts...)
			}
			err := s.Validate(fastArgs(t, c.args), nil)
			var ve *ValidationError
			var re *RuntimeError
			switch c.wantErr.(type) {
			case nil:
				if err != nil {
					t.Errorf("%s: %v, want valid", c.reason, err)
				}
			case *ValidationError:
				if !errors.As(err, &ve) {
					t.Errorf("%s: %T %v, want *ValidationError", c.reason, err, err)
				}
			case *RuntimeError:
				if !errors.As(err, &re) || errors.As(err, &ve) {
					t.Errorf("%s: %T %v, want *RuntimeError", c.reason, err, err)
				}
			}
		}
	}
}

// TestViolationKeyword: each violation names the keyword that failed, what
// repair analytics count failures by; several at once keep theirs.
func TestViolationKeyword(t *testing.T) {
	cases := []struct {
		reason, schema, args string
		want                 []string // pointer=keyword, in the violations' order
	}{
		{reason: "a wrong type", schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`, args: `{"n":"1"}`, want: []string{"/n=type"}},
		{reason: "a missing argument is required's", schema: `{"type":"object","required":["a"]}`, args: `{}`, want: []string{"/a=required"}},
		{reason: "an unknown argument is additionalProperties'", schema: `{"type":"object","additionalProperties":false}`, args: `{"zz":1}`, want: []string{"/zz=additionalProperties"}},
		{reason: "a value outside the enum", schema: `{"type":"object","properties":{"e":{"enum":["a"]}}}`, args: `{"e":"b"}`, want: []string{"/e=enum"}},
		{reason: "two at once, each its own", schema: `{"type":"object","properties":{"s":{"type":"string","minLength":3},"n":{"maximum":2}}}`, args: `{"s":"x","n":5}`,
			want: []string{"/n=maximum", "/s=minLength"}},
		{reason: "an integer beyond ±2^53 is the gateway's own type check", schema: `{"type":"object","properties":{"i":{"type":"integer"}}}`, args: `{"i":1e300}`, want: []string{"/i=type"}},
	}
	for _, c := range cases {
		err := compileJSON(t, c.schema, WithoutFastPaths()).Validate(fastArgs(t, c.args), nil)
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: %v, want a *ValidationError", c.reason, err)
			continue
		}
		var got []string
		for _, v := range ve.Violations {
			got = append(got, v.Pointer+"="+v.Keyword)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.reason, got, c.want)
		}
	}
}
