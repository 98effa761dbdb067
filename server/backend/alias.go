package backend

import (
	"context"
	"fmt"

	"github.com/flowdrop/gateway/server/pipeline"
)

// unresolvedAlias is the alias kind's adapter. An alias has no backend of
// its own: the pipeline's alias stage replaces the call's entry with its
// target's before dispatch, so a call reaching here is the pipeline's
// mistake, and fails closed (Internal) rather than going anywhere.
type unresolvedAlias struct{}

func (unresolvedAlias) Invoke(_ context.Context, c *pipeline.Call) (pipeline.Result, error) {
	return pipeline.Result{}, fmt.Errorf("tool %q: an alias reached dispatch unresolved", c.Tool) // Internal
}
