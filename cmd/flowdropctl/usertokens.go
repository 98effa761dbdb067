package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// The user-consent identity mode's stored per-user tokens (the gateway's
// upstream_identity.user_consent): list who holds one at which OAuth
// client — never a token — and revoke them per subject, per client.
var userTokensGroup = &group{name: "usertokens", usage: userTokensUsage, subs: []subcommand{
	{"list", noStdin(userTokensList)},
	{"revoke", noStdin(userTokensRevoke)},
}}

var userTokensCommand = userTokensGroup.command("list or revoke the per-user upstream tokens (identity mode user-consent); never shows a token")

const userTokensUsage = `usage: flowdropctl usertokens <command> [flags]

commands:
  list [--subject S] [--client C]
                   who holds a stored token at which OAuth client
  revoke SUBJECT [--client C]
                   delete SUBJECT's tokens (at client C, else at every client);
                   their next call is asked to authorize again

Both take the connection flags (--addr, --api-key-file, ...); the caller
needs the admin role.
`

func newUserTokensFlags(sub, usage string, stderr io.Writer) (*toolsFlags, *string) {
	fs := flag.NewFlagSet("flowdropctl usertokens "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: flowdropctl usertokens "+usage); fs.PrintDefaults() }
	f := &toolsFlags{fs: fs, conn: addConnFlags(fs), timeout: fs.Duration("timeout", 30*time.Second, "deadline for the whole command (0: none)"),
		out: addOutputFlag(fs)}
	return f, fs.String("client", "", "only this OAuth client (user_consent.clients[].name)")
}

func userTokensList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, client := newUserTokensFlags("list", "list [--subject S] [--client C] [--addr HOST:PORT]", stderr)
	subject := f.fs.String("subject", "", "only this caller subject")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	c, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return exitUsage
	}
	defer done()
	resp, err := c.ListUserTokens(ctx, &gatewayv1.ListUserTokensRequest{Subject: *subject, Client: *client})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		items := make([]map[string]string, 0, len(resp.GetTokens()))
		for _, t := range resp.GetTokens() {
			items = append(items, map[string]string{"subject": t.GetSubject(), "client": t.GetClient()})
		}
		writeJSON(stdout, map[string]any{"tokens": items, "truncated": resp.GetTruncated()})
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBJECT\tCLIENT")
	for _, t := range resp.GetTokens() {
		fmt.Fprintf(tw, "%s\t%s\n", t.GetSubject(), t.GetClient())
	}
	tw.Flush()
	if resp.GetTruncated() {
		fmt.Fprintln(stderr, "(the store holds more than one listing returns)")
	}
	return exitOK
}

func userTokensRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, client := newUserTokensFlags("revoke", "revoke SUBJECT [--client C] [--addr HOST:PORT]", stderr)
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	c, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return exitUsage
	}
	defer done()
	resp, err := c.RevokeUserTokens(ctx, &gatewayv1.RevokeUserTokensRequest{Subject: pos[0], Client: *client})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		writeJSON(stdout, map[string]any{"revoked": resp.GetRevoked()})
		return exitOK
	}
	fmt.Fprintf(stdout, "revoked %d token(s) of %s\n", resp.GetRevoked(), pos[0])
	return exitOK
}
