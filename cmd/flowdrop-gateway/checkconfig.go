package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/replay"
)

// checkConfig is `flowdrop-gateway check-config --policy FILE [--tools
// FILE] [--strict] [--replay AUDIT.jsonl [--format text|json]]`: it
// validates the files offline, as start-up and a reload would, and what the
// policy lets callers reach (server.CheckConfigWarnings), for CI: warnings
// on stderr, problems with --strict; with --replay it then replays the audit's tool calls against them
// (server.ReplayAudit) and writes the report to stdout. Exit 0: valid (and
// no decision would change); 1: problems, each on a line of its own on
// stderr; 2: bad usage; 3: valid, and the replay found decisions that
// would change.
func checkConfig(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowdrop-gateway check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	policyFile := fs.String("policy", "", "policy file to check (YAML or JSON)")
	toolsFile := fs.String("tools", "", "tools file to check (YAML or JSON)")
	var strictLint strictLintFlag
	fs.Var(&strictLint, "strict-lint", strictLintUsage+", as the gateway's --strict-lint")
	strict := fs.Bool("strict", false, "make warnings (a policy under which no tool can be called) problems")
	replayFile := fs.String("replay", "", "audit log (JSON lines) whose tool calls to replay against --policy and --tools (\"-\": stdin)")
	format := fs.String("format", "text", "the replay report's format: text or json")
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
	if *replayFile != "" && (*policyFile == "" || *toolsFile == "") {
		fmt.Fprintln(stderr, "flowdrop-gateway check-config: --replay needs both --policy FILE and --tools FILE (the candidate policy and tool set)")
		return 2
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "flowdrop-gateway check-config: --format %q: want text or json\n", *format)
		return 2
	}
	warnings, err := server.CheckConfigWarnings(ctx, *policyFile, *toolsFile, strictLint.on, strictLint.profiles...)
	if *strict {
		for _, w := range warnings {
			err = errors.Join(err, errors.New(w))
		}
		warnings = nil
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "flowdrop-gateway check-config: warning:", w)
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, "flowdrop-gateway check-config:", line)
		}
		return 1
	}
	if *replayFile != "" {
		return replayAudit(ctx, *policyFile, *toolsFile, *replayFile, *format, stdin, stdout, stderr)
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

// replayAudit is check-config's --replay, once the files are valid.
func replayAudit(ctx context.Context, policyFile, toolsFile, auditFile, format string, stdin io.Reader, stdout, stderr io.Writer) int {
	audit := stdin
	if auditFile != "-" {
		f, err := os.Open(auditFile)
		if err != nil {
			fmt.Fprintln(stderr, "flowdrop-gateway check-config:", err)
			return 1
		}
		defer f.Close()
		audit = f
	}
	rep, err := server.ReplayAudit(ctx, policyFile, toolsFile, audit, replay.Options{})
	if err != nil {
		fmt.Fprintln(stderr, "flowdrop-gateway check-config: replay:", err)
		return 1
	}
	if format == "json" {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "flowdrop-gateway check-config: writing the report:", err)
		return 1
	}
	if rep.AllowedToRefused+rep.RefusedToAllowed > 0 {
		return 3
	}
	return 0
}
