package server

import (
	"errors"
	"time"
)

// Why /readyz answers 503.
var (
	reasonWaitingForStore = "waiting for the registry store"
	reasonStarting        = "starting"
	reasonShuttingDown    = "shutting down"
)

// storeWaited is how long Start has been waiting for the registry store
// (0 when it is not waiting).
func (g *Gateway) storeWaited() time.Duration {
	if t := g.storeWaitStart.Load(); t != 0 {
		return time.Since(time.Unix(0, t))
	}
	return 0
}

// errAuditUnwritable is /readyz's reason while fail-closed audit cannot
// write (no path: the log line has it).
var errAuditUnwritable = errors.New("audit log cannot be written (audit.on_failure: fail-closed); calls are refused")

// readiness is /readyz: serving, and not refusing every call for audit.
func (g *Gateway) readiness() error {
	if r := g.notReady.Load(); r != nil {
		return errors.New(*r)
	}
	if g.auditor != nil && !g.auditor.Writable() {
		return errAuditUnwritable
	}
	return nil
}
