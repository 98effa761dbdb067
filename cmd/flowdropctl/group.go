package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// group is a command made of subcommands (`tools list`, `bundles put`):
// its one table drives dispatch, the unknown-command message and shell
// completion, so none of them can miss a subcommand.
type group struct {
	name  string
	usage string
	subs  []subcommand
}

// subcommand is one command of a group; run gets the arguments after its
// name.
type subcommand struct {
	name string
	run  func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// noStdin adapts a subcommand that reads no input.
func noStdin(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) func(context.Context, []string, io.Reader, io.Writer, io.Writer) int {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return run(ctx, args, stdout, stderr)
	}
}

// command is the group as a flowdropctl command.
func (g *group) command(summary string) *command {
	return &command{name: g.name, summary: summary, run: interruptible(g.dispatch), group: g}
}

func (g *group) dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, g.usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, g.usage)
		return exitOK
	}
	for _, s := range g.subs {
		if s.name == args[0] {
			return s.run(ctx, args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "flowdropctl %s: unknown command %q (want %s)\n", g.name, args[0], g.wanted())
	return exitUsage
}

// asksHelp reports whether args is a request for a command's usage,
// which is answered on stdout with exit 0, not as a usage error.
func asksHelp(args []string) bool {
	return len(args) == 1 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0])
}

// names lists the subcommands in the table's order.
func (g *group) names() []string {
	names := make([]string, len(g.subs))
	for i, s := range g.subs {
		names[i] = s.name
	}
	return names
}

// wanted is "a, b or c".
func (g *group) wanted() string {
	names := g.names()
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
