package main

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryHelpExitsZero: --help (and -h) on every command and every
// subcommand of a group prints its usage and exits 0: asking for help is
// not a usage error (a script checking the exit status would take it for
// one, as invoke's did).
func TestEveryHelpExitsZero(t *testing.T) {
	var paths [][]string
	for _, name := range sortedKeys(commands) {
		c := commands[name]
		paths = append(paths, []string{name})
		if c.group != nil {
			for _, s := range c.group.subs {
				paths = append(paths, []string{name, s.name})
			}
		}
	}
	for _, p := range paths {
		for _, flag := range []string{"--help", "-h"} {
			code, out, errOut := ctl(t, append(slices.Clone(p), flag)...)
			if code != 0 || !strings.Contains(out+errOut, "usage") {
				t.Errorf("flowdropctl %s %s: exit %d, want 0 and its usage\nstdout: %s\nstderr: %s", strings.Join(p, " "), flag, code, out, errOut)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
