// Command flowdropctl is the FlowDrop gateway's command-line tool.
//
// Each subcommand lives in its own file as a *command value; the table below
// lists them all in one place (no init-time registration), and run only
// dispatches.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/flowdrop/gateway/internal/buildinfo"
)

// command is one subcommand. run gets the arguments after the subcommand
// name and returns the process exit code (0 ok, 1 failure, 2 usage/input error).
type command struct {
	name    string
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// group is the command's subcommands, if it has them.
	group *group
}

// commands is every subcommand, by name.
var commands = commandTable(applyCommand, bundlesCommand, completionCommand, hashKeyCommand, healthCommand, invokeCommand, normalizeCommand, toolsCommand, userTokensCommand)

func commandTable(cs ...*command) map[string]*command {
	m := make(map[string]*command, len(cs))
	for _, c := range cs {
		if _, dup := m[c.name]; dup {
			panic("flowdropctl: two subcommands named " + c.name)
		}
		m[c.name] = c
	}
	return m
}

// interruptible adapts a command that takes a context: the context ends on
// SIGINT or SIGTERM, so a call or a watch in flight stops cleanly.
func interruptible(run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int) func([]string, io.Reader, io.Writer, io.Writer) int {
	return func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run(ctx, args, stdin, stdout, stderr)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: tests call it in-process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, "flowdropctl", buildinfo.Read())
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "flowdropctl: unknown command %q (run flowdropctl help)\n", args[0])
		return 2
	}
	return c.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: flowdropctl <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun flowdropctl <command> -h for a command's flags.")
}
