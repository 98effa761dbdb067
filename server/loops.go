package server

import "github.com/flowdrop/gateway/registry"

// The gateway's own loops, started by Start and stopped by Close
// (stopLoops, loops).

// pruneLoop closes backend connections and MCP upstream sessions no
// registered tool uses any more, and forgets audit redactors of gone
// revisions, each time the registry changes.
func (g *Gateway) pruneLoop() {
	defer g.loops.Done()
	changes, unsubscribe := g.reg.Changes()
	defer unsubscribe()
	warned := map[*registry.Entry]bool{}
	g.warnUnconfiguredStdio(g.reg.Snapshot().List(), warned)
	for {
		select {
		case <-g.stopLoops:
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
			inUse := map[string]bool{}
			entries := g.reg.Snapshot().List()
			g.warnUnconfiguredStdio(entries, warned)
			for _, e := range entries {
				inUse[e.Tool.Target()] = true
			}
			g.tools.Retain(func(target string) bool { return inUse[target] })
			g.kinds.MCPUpstream.Retain(entries)
			if g.auditor != nil {
				g.auditor.Prune(entries)
			}
			g.repairs.Prune(entries)
		}
	}
}

// auditHealthChanged tells auditHealthLoop the audit log's writability
// changed (the sink's OnFail and OnRecover: it never blocks the writer).
func (g *Gateway) auditHealthChanged() {
	select {
	case g.auditHealth <- struct{}{}:
	default: // a change is pending already: the loop reads the state, not the count
	}
}

// auditHealthLoop keeps the gRPC health of the gateway's calls in step
// with whether they can be served: NOT_SERVING while fail-closed audit
// cannot write and refuses every call, so a balancer checking gRPC health
// moves traffic away as one checking /readyz does; SERVING again once it
// writes.
func (g *Gateway) auditHealthLoop() {
	defer g.loops.Done()
	serving := true
	for {
		if now := g.auditor.Writable(); now != serving {
			serving = now
			g.grpc.SetInvokeServing(serving)
		}
		select {
		case <-g.stopLoops:
			return
		case <-g.auditHealth:
		}
	}
}
