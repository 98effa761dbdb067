package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// TestToolsExport: `tools export` prints the provider's document on stdout
// (ready to hand to the API), lists what the format cannot carry on
// stderr, and with --output json wraps both in one document.
func TestToolsExport(t *testing.T) {
	env := gatewaytest.Start(t)
	cases := []struct {
		name, reason string
		args         []string
		wantCode     int
		check        func(t *testing.T, stdout, stderr string)
	}{
		{name: "openai-strict", reason: "stdout is the tools array; the left-out tool and its lint error are on stderr",
			args: []string{"--format", "openai-strict"},
			check: func(t *testing.T, stdout, stderr string) {
				var tools []struct {
					Type     string
					Function struct {
						Name   string
						Strict bool
					}
				}
				if err := json.Unmarshal([]byte(stdout), &tools); err != nil {
					t.Fatalf("stdout is not a tools array: %v\n%s", err, stdout)
				}
				if len(tools) != 3 || tools[0].Type != "function" || !tools[0].Function.Strict {
					t.Errorf("tools %+v", tools)
				}
				if !strings.Contains(stderr, "left out update_settings") || !strings.Contains(stderr, "/properties/settings strict-object-properties") {
					t.Errorf("stderr lacks the left-out tool and its finding:\n%s", stderr)
				}
			}},
		{name: "gemini", reason: "Gemini's document is one Tool object holding the declarations",
			args: []string{"--format", "gemini"},
			check: func(t *testing.T, stdout, _ string) {
				var doc struct{ FunctionDeclarations []struct{ Name string } }
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.FunctionDeclarations) != 4 {
					t.Errorf("stdout %s (%v)", stdout, err)
				}
			}},
		{name: "output-json", reason: "--output json: one document with the tools and left_out",
			args: []string{"--format", "openai-strict", "--output", "json"},
			check: func(t *testing.T, stdout, _ string) {
				var doc struct {
					Tools   []any
					LeftOut []struct {
						Name     string
						Findings []string
					} `json:"left_out"`
				}
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
					t.Fatalf("stdout: %v\n%s", err, stdout)
				}
				if len(doc.Tools) != 3 || len(doc.LeftOut) != 1 || doc.LeftOut[0].Name != "update_settings" || len(doc.LeftOut[0].Findings) == 0 {
					t.Errorf("document %+v", doc)
				}
			}},
		{name: "bad-format", reason: "an unknown format is a usage error, nothing is sent",
			args: []string{"--format", "cohere"}, wantCode: 2,
			check: func(t *testing.T, _, stderr string) {
				if !strings.Contains(stderr, "--format must be openai, openai-strict, anthropic, gemini or mcp") {
					t.Errorf("stderr %s", stderr)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := ctl(t, append([]string{"tools", "export", "--addr", env.Addr}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d (%s)\nstdout: %s\nstderr: %s", code, tc.wantCode, tc.reason, stdout, stderr)
			}
			tc.check(t, stdout, stderr)
		})
	}
}

// TestToolsExportPagesALargeRegistry: a registry whose export is larger
// than a client's 4 MiB receive limit (450 tools with 12 KiB
// descriptions) is exported whole — every tool once, in name order, one
// document (the pages joined); unpaged it could not be received.
func TestToolsExportPagesALargeRegistry(t *testing.T) {
	const extra = 2*exportPageSize + 50
	description := strings.Repeat("A long description. ", 12<<10/20)
	opts := []gatewaytest.Option{}
	for i := range extra {
		mk := gatewaytest.ObjectTool(fmt.Sprintf("bulk_%04d", i))
		opts = append(opts, gatewaytest.WithTool(func(backend string) registry.Tool {
			tl := mk(backend)
			tl.Description = description
			return tl
		}))
	}
	env := gatewaytest.Start(t, opts...)
	for _, format := range []string{"gemini", "mcp"} {
		code, stdout, stderr := ctl(t, "tools", "export", "--addr", env.Addr, "--format", format)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", format, code, stderr)
		}
		var doc struct{ FunctionDeclarations []struct{ Name string } }
		var arr []struct{ Name string }
		if format == "gemini" {
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("gemini: stdout is not one tools object: %v", err)
			}
			arr = doc.FunctionDeclarations
		} else if err := json.Unmarshal([]byte(stdout), &arr); err != nil {
			t.Fatalf("mcp: stdout is not one array: %v", err)
		}
		var names []string
		for _, d := range arr {
			names = append(names, d.Name)
		}
		ordered := true // strictly: each once
		for i := 1; i < len(names); i++ {
			ordered = ordered && names[i-1] < names[i]
		}
		if len(names) != extra+4 || !ordered {
			t.Errorf("%s: %d tools (strictly in name order: %v); want %d, each once, in name order", format, len(names), ordered, extra+4)
		}
	}
}

// TestToolsExportOptionalNulls: an openai-strict export tells when the
// gateway it came from refuses the nulls the export invites (optional
// properties made nullable, while the gateway's normalize.optional_nulls is
// not drop for the tool): a warning on stderr naming the tools and the
// setting, and optional_nulls_refused in --output json. A gateway that
// drops them gets neither; other formats invite no null.
func TestToolsExportOptionalNulls(t *testing.T) {
	keep := gatewaytest.Start(t)
	drop := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Normalize.OptionalNulls = policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop}
	}))
	cases := []struct {
		name, reason string
		env          *gatewaytest.Env
		format       string
		want         []string // the tools named
	}{
		{name: "keep", reason: "the default refuses them: create_note's and run_command's optional properties became nullable",
			env: keep, format: "openai-strict", want: []string{"create_note", "run_command"}},
		{name: "drop", reason: "a gateway dropping optional nulls accepts what the export invites",
			env: drop, format: "openai-strict", want: []string{}},
		{name: "not-strict", reason: "plain openai keeps optional properties optional",
			env: keep, format: "openai", want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := ctl(t, "tools", "export", "--addr", tc.env.Addr, "--format", tc.format)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			warned := strings.Contains(stderr, "normalize.optional_nulls: drop")
			if warned != (len(tc.want) > 0) || warned && !strings.Contains(stderr, strings.Join(tc.want, ", ")) {
				t.Errorf("stderr %q: want a warning naming %v (%s)", stderr, tc.want, tc.reason)
			}
			code, stdout, stderr := ctl(t, "tools", "export", "--addr", tc.env.Addr, "--format", tc.format, "--output", "json")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			var doc struct {
				Refused []string `json:"optional_nulls_refused"`
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Refused == nil || !slices.Equal(doc.Refused, tc.want) {
				t.Errorf("optional_nulls_refused %v (%v), want %v (%s)\n%s", doc.Refused, err, tc.want, tc.reason, stdout)
			}
		})
	}
}
