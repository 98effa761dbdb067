package main

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry/lint"
)

// TestStrictLintFlag: --strict-lint alone enforces the default profiles,
// with a list the profiles named, =false nothing; an unknown profile is a
// usage error naming it.
func TestStrictLintFlag(t *testing.T) {
	cases := []struct {
		reason   string
		args     []string
		strict   bool
		profiles []lint.Profile
		err      string
	}{
		{reason: "off by default", args: nil},
		{reason: "alone: the default profiles (nil: server's default)", args: []string{"--strict-lint"}, strict: true},
		{reason: "=true is the same", args: []string{"--strict-lint=true"}, strict: true},
		{reason: "=false is off", args: []string{"--strict-lint=false"}},
		{reason: "the profiles this deployment exports to", args: []string{"--strict-lint=openai,anthropic"}, strict: true, profiles: []lint.Profile{lint.OpenAI, lint.Anthropic}},
		{reason: "openai-strict only when named; repeats once", args: []string{"--strict-lint=openai-strict, gemini,gemini"}, strict: true, profiles: []lint.Profile{lint.OpenAIStrict, lint.Gemini}},
		{reason: "an unknown profile is refused naming it", args: []string{"--strict-lint=openai,claude"}, err: `unknown lint profile "claude"`},
	}
	for _, c := range cases {
		cfg, _, err := parseFlags(append([]string{"--auth-off"}, c.args...), io.Discard)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.reason, err, c.err)
			}
			continue
		}
		if err != nil || cfg.StrictLint != c.strict || fmt.Sprint(cfg.LintProfiles) != fmt.Sprint(c.profiles) {
			t.Errorf("%s: strict %v profiles %v (%v); want %v %v", c.reason, cfg.StrictLint, cfg.LintProfiles, err, c.strict, c.profiles)
		}
	}
}
