package main

import (
	"strconv"
	"strings"

	"github.com/flowdrop/gateway/registry/lint"
)

// strictLintFlag is --strict-lint: alone (or =true) it enforces the
// default profiles (registry.DefaultLintProfiles: openai, anthropic,
// gemini, the formats the gateway exports a registered tool to), =false
// nothing, and =openai,anthropic the profiles named — the formats this
// deployment exports to. Registrations are linted against the same
// profiles, strict or not.
type strictLintFlag struct {
	on       bool
	profiles []lint.Profile // nil: the default
}

func (f *strictLintFlag) IsBoolFlag() bool { return true }

func (f *strictLintFlag) String() string {
	if f == nil || !f.on {
		return "false"
	}
	if len(f.profiles) == 0 {
		return "true"
	}
	names := make([]string, len(f.profiles))
	for i, p := range f.profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ",")
}

func (f *strictLintFlag) Set(s string) error {
	if b, err := strconv.ParseBool(s); err == nil {
		f.on, f.profiles = b, nil
		return nil
	}
	ps, err := lint.ParseProfiles(s)
	if err != nil {
		return err
	}
	f.on, f.profiles = true, ps
	return nil
}

// strictLintUsage is the flag's help text.
const strictLintUsage = "refuse tools whose schema has provider-lint errors a format's export cannot repair; alone: the default profiles openai,anthropic,gemini; or name the profiles this deployment exports to, e.g. --strict-lint=openai,anthropic (openai-strict too if clients use it)"
