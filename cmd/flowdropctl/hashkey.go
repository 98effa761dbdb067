package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flowdrop/gateway/internal/policy"
)

var hashKeyCommand = &command{name: "hash-key", summary: "print the sha256 of an API key for a policy file's auth.api_keys", run: runHashKey}

// runHashKey reads the key from stdin (first line), so it stays out of the
// shell history and the process list, and prints "sha256:<hex>".
func runHashKey(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowdropctl hash-key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flowdropctl hash-key [--output text|json] < keyfile   (the key is read from stdin, never from arguments)")
		fs.PrintDefaults()
	}
	out := addOutputFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // the usage was asked for, and printed
		}
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		fmt.Fprintln(stderr, "flowdropctl hash-key:", err)
		return 1
	}
	key := strings.TrimRight(line, "\r\n")
	if key == "" {
		fmt.Fprintln(stderr, "flowdropctl hash-key: no key on stdin")
		return 2
	}
	if out.json {
		writeJSON(stdout, map[string]string{"sha256": policy.HashAPIKey(key)})
		return 0
	}
	fmt.Fprintln(stdout, policy.HashAPIKey(key))
	return 0
}
