package replay

import (
	"errors"
	"fmt"

	"github.com/flowdrop/gateway/registry"
)

// Tools is a candidate tool set compiled from definitions (a tools file);
// a running gateway's registry snapshot serves as well.
type Tools map[string]*registry.Entry

// Lookup is the tool's compiled entry (pipeline.Lookup).
func (t Tools) Lookup(name string) (*registry.Entry, bool) {
	e, ok := t[name]
	return e, ok
}

// CompileTools compiles every tool with o (the gateway's schema bounds);
// every tool that does not compile is named in the error.
func CompileTools(tools []registry.Tool, o registry.CompileOptions) (Tools, error) {
	out := make(Tools, len(tools))
	var errs []error
	for _, t := range tools {
		e, err := o.Compile(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("tool %q: %w", t.Name, err))
			continue
		}
		out[t.Name] = e
	}
	return out, errors.Join(errs...)
}
