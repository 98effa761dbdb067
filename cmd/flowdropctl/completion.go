package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

var completionCommand = &command{
	name:    "completion",
	summary: "print a shell completion script: flowdropctl completion bash|zsh",
}

// The run function lists the command table it is in: set at init, not in
// the table's initializer (that would be an initialization cycle).
func init() { completionCommand.run = runCompletion }

func runCompletion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	const usage = "usage: flowdropctl completion bash|zsh   (e.g. source <(flowdropctl completion bash))"
	if asksHelp(args) {
		fmt.Fprintln(stdout, usage)
		return exitOK
	}
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	fmt.Fprint(stdout, completionScript(args[0], commands))
	return exitOK
}

// commonFlags are the flags most commands take, for completion.
var commonFlags = []string{"--addr", "--api-key-file", "--token-file", "--tls", "--ca-file", "--cert-file", "--key-file",
	"--server-name", "--timeout", "--output"}

// completionScript is a bash completion function (zsh runs it through
// bashcompinit): commands, every group's subcommands, flags, and
// --output's values.
func completionScript(shell string, cmds map[string]*command) string {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var groups strings.Builder
	for _, n := range names {
		if g := cmds[n].group; g != nil {
			groups.WriteString(`  if [ "${COMP_WORDS[1]}" = ` + g.name + ` ] && [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W "` + strings.Join(g.names(), " ") + `" -- "$cur")); return; fi` + "\n")
		}
	}
	script := `# flowdropctl completion (` + shell + `)
_flowdropctl() {
  local cur prev
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  if [ "$prev" = "--output" ]; then COMPREPLY=($(compgen -W "text json" -- "$cur")); return; fi
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=($(compgen -W "` + strings.Join(names, " ") + ` help --version" -- "$cur")); return; fi
` + groups.String() + `  if [ "${COMP_WORDS[1]}" = completion ] && [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W "bash zsh" -- "$cur")); return; fi
  case "$cur" in
    -*) COMPREPLY=($(compgen -W "` + strings.Join(commonFlags, " ") + `" -- "$cur")) ;;
    *) COMPREPLY=($(compgen -f -- "$cur")) ;;
  esac
}
`
	if shell == "zsh" {
		script += "autoload -U +X bashcompinit && bashcompinit\n"
	}
	return script + "complete -F _flowdropctl flowdropctl\n"
}
