package schema

import (
	"errors"
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
