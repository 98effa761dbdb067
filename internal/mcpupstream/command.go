package mcpupstream

import (
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command is an MCP server the gateway runs as a process and speaks to
// over its stdin and stdout (the stdio transport). It comes from the
// gateway's own configuration only: a registered tool names one, never a
// command.
type Command struct {
	// Path is the executable's absolute path; Args follow it.
	Path string
	Args []string
	// Env is the process's environment, and PassEnv names variables
	// copied from the gateway's own environment when the process starts
	// (an unset one is left out). Nothing else is inherited: the gateway's
	// credentials stay its own.
	Env     map[string]string
	PassEnv []string
	// InheritEnv gives the process this process's whole environment
	// besides: for a command an operator runs by hand (flowdropctl's
	// listing), never for the gateway's servers.
	InheritEnv bool
	// Dir is the working directory ("": the gateway's).
	Dir string
}

// terminateAfter is how long closing a session waits for the process to
// exit after its stdin closes, before SIGTERM (and as long again before
// SIGKILL).
const terminateAfter = 2 * time.Second

// transport is the stdio transport that starts c (when the session
// connects), its stderr to stderr (nil: discarded). Each session is a
// process of its own.
func (c Command) transport(stderr io.Writer) *mcp.CommandTransport {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = []string{} // non-nil: nothing inherited
	if c.InheritEnv {
		cmd.Env = os.Environ()
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		cmd.Env = append(cmd.Env, k+"="+c.Env[k])
	}
	for _, name := range c.PassEnv {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	cmd.Dir = c.Dir
	cmd.Stderr = stderr
	// Wait returns this long after the process exits even if a child of
	// it still holds stderr open.
	cmd.WaitDelay = terminateAfter
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}
}
