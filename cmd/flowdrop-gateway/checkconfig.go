package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flowdrop/gateway/server"
)

// checkConfig is `flowdrop-gateway check-config --policy FILE [--tools
// FILE]`: it validates the files offline, as start-up and a reload would
// (server.CheckConfig), for CI. Exit 0: valid; 1: problems, each on a line
// of its own on stderr; 2: bad usage.
func checkConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowdrop-gateway check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	policyFile := fs.String("policy", "", "policy file to check (YAML or JSON)")
	toolsFile := fs.String("tools", "", "tools file to check (YAML or JSON)")
	var strictLint strictLintFlag
	fs.Var(&strictLint, "strict-lint", strictLintUsage+", as the gateway's --strict-lint")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flowdrop-gateway check-config: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	if *policyFile == "" && *toolsFile == "" {
		fmt.Fprintln(stderr, "flowdrop-gateway check-config: give --policy FILE and/or --tools FILE")
		return 2
	}
	if err := server.CheckConfig(ctx, *policyFile, *toolsFile, strictLint.on, strictLint.profiles...); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, "flowdrop-gateway check-config:", line)
		}
		return 1
	}
	var checked []string
	for _, f := range []string{*policyFile, *toolsFile} {
		if f != "" {
			checked = append(checked, f)
		}
	}
	fmt.Fprintln(stdout, "ok:", strings.Join(checked, ", "))
	return 0
}
