package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// survivingHangups catches SIGHUP, which by default kills a process at once
// (no draining), and only logs it: policy reload on SIGHUP is not
// implemented yet, so nothing changes. stop releases the signal.
func survivingHangups(log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				log.Warn("SIGHUP received: policy reload is not supported yet; nothing changed, still serving (SIGTERM or SIGINT stops the gateway)")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
