package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagGroups orders --help by concern. Every flag belongs to exactly one
// group (TestHelpGroupsEveryFlag); a flag added without a group is listed
// under "other" and fails that test.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Listeners", []string{"listen", "mcp-listen", "admin-listen", "pprof-listen"}},
	{"Tools and the registry store", []string{"tools", "demo", "strict-lint", "store", "data-dir",
		"etcd-endpoints", "etcd-prefix", "etcd-request-timeout", "etcd-reconnect-max-delay", "etcd-ca-file", "etcd-cert-file", "etcd-key-file"}},
	{"Policy (authentication, authorization, rules, limits, audit)", []string{"policy", "watch-policy", "auth-off"}},
	{"Calls and backends", []string{"default-timeout", "max-call-timeout", "backend-reconnect-max-delay", "backend-eject-failures", "backend-eject-base",
		"backend-eject-max", "backend-eject-max-percent", "backend-mcp-idle-conns", "backend-mcp-subject-sessions", "backend-mcp-subject-session-idle",
		"max-recv-msg-size", "max-send-msg-size", "backend-max-recv-msg-size", "backend-max-send-msg-size", "disable-fast-paths"}},
	{"Fleet state (Redis: rate limits shared by every replica)", []string{"redis-addr", "redis-username", "redis-password-file",
		"redis-db", "redis-mode", "redis-sentinel-master", "redis-sentinel-password-file", "redis-timeout", "redis-tls", "redis-tls-ca-file", "redis-tls-cert-file", "redis-tls-key-file", "redis-tls-server-name"}},
	{"gRPC connections (what a peer can make the gateway hold)", []string{"grpc-max-streams", "grpc-max-unauthenticated-streams",
		"grpc-unauthenticated-receive-timeout", "grpc-stream-window", "grpc-conn-window", "grpc-max-header-bytes",
		"grpc-handshake-timeout", "grpc-idle-timeout", "grpc-keepalive-time", "grpc-keepalive-timeout"}},
	{"MCP over HTTP", []string{"mcp-read-timeout", "mcp-write-timeout", "mcp-idle-timeout", "mcp-max-connections", "mcp-sdk-only"}},
	{"Process: logs, memory, shutdown", []string{"log-level", "log-format", "log-ok-calls", "repair-stats-caller", "gc-percent", "memory-limit", "shutdown-grace"}},
}

// printUsage is flowdrop-gateway's --help: the flags by group, each as
// flag.PrintDefaults would show it.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: flowdrop-gateway [flags]
       flowdrop-gateway --version
       flowdrop-gateway check-config --policy FILE [--tools FILE] [--strict]
                                     [--replay AUDIT.jsonl [--format text|json]]

With no flags: the demo tools on the embedded store, authentication off.
`)
	grouped := map[string]bool{}
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, n := range g.names {
			if f := fs.Lookup(n); f != nil {
				printFlag(w, f)
				grouped[n] = true
			}
		}
	}
	var other []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !grouped[f.Name] {
			other = append(other, f)
		}
	})
	if len(other) > 0 {
		fmt.Fprintf(w, "\nother:\n")
		for _, f := range other {
			printFlag(w, f)
		}
	}
}

// printFlag prints one flag as flag.PrintDefaults does: name, type, usage,
// default.
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if name != "" {
		line += " " + name
	}
	usage = strings.ReplaceAll(usage, "\n", "\n    \t")
	line += "\n    \t" + usage
	if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
		line += fmt.Sprintf(" (default %q)", f.DefValue)
	}
	fmt.Fprintln(w, line)
}
