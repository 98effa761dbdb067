package main

import (
	"crypto/sha256"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/flowdrop/gateway/server"
)

// reloadDebounce gathers the events of one save (an editor's write, rename
// and chmod) into one reload.
const reloadDebounce = 200 * time.Millisecond

// inPlaceSettle is how long a policy file written in place (not renamed
// over) must stay unwritten before it is read: only a rename is known to
// be whole (docs/policy.md, "Reloading the policy").
const inPlaceSettle = 2 * time.Second

// policyReloader reloads the --policy file into the running gateway on
// SIGHUP and when the file changes (Gateway.ReloadPolicyFile: a bad file is
// refused, logged and counted, and the policy in force keeps serving).
type policyReloader struct {
	log    *slog.Logger
	path   string                     // the --policy file; "": none
	adjust func(*server.PolicyConfig) // the flags' overrides of the file
	// watchFile reloads on changes of the file (--watch-policy).
	watchFile bool
	g         atomic.Pointer[server.Gateway]

	mu sync.Mutex // one reload at a time; guards last
	// last is the content last reloaded (or tried): file events that leave
	// the file as it was (a touch, a sibling's change) reload nothing.
	last [sha256.Size]byte
}

// reload reloads the file now (why: what asked for it, for the log).
func (r *policyReloader) reload(why string) {
	g := r.g.Load()
	switch {
	case r.path == "":
		r.log.Warn(why + ": no --policy file, so there is nothing to reload; nothing changed, still serving (SIGTERM or SIGINT stops the gateway)")
		return
	case g == nil:
		r.log.Warn(why + ": the gateway is still starting; nothing reloaded (send it again once it serves)")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, err := os.ReadFile(r.path); err == nil {
		r.last = sha256.Sum256(b)
	}
	r.log.Info(why+": reloading the policy", "policy", r.path)
	g.ReloadPolicyFile(r.path, r.adjust) // logs and counts the outcome
}

// changed reloads the file if its content differs from the last reload's.
func (r *policyReloader) changed() {
	b, err := os.ReadFile(r.path)
	if err == nil {
		r.mu.Lock()
		same := sha256.Sum256(b) == r.last
		r.mu.Unlock()
		if same {
			return
		}
	} // unreadable (removed): reload, which says why it cannot
	r.reload("policy file changed")
}

// serving makes g the gateway reloads go to, remembering the policy it
// started with.
func (r *policyReloader) serving(g *server.Gateway) {
	if r.path != "" {
		if b, err := os.ReadFile(r.path); err == nil {
			r.mu.Lock()
			r.last = sha256.Sum256(b)
			r.mu.Unlock()
		}
	}
	r.g.Store(g)
}

// catchHangups reloads on SIGHUP, which by default kills a process at once
// (no draining). stop releases the signal.
func (r *policyReloader) catchHangups() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				r.reload("SIGHUP received")
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

// watch reloads when the policy file changes. It watches the file's
// directory, not the file: editors save by writing a new file and renaming
// it over the old one, and Kubernetes swaps a ConfigMap's symlink, and a
// watch on the old inode would see neither.
func (r *policyReloader) watch() (stop func(), err error) {
	if r.path == "" || !r.watchFile {
		return func() {}, nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(filepath.Dir(r.path)); err != nil {
		w.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		quiet := time.NewTimer(time.Hour)
		quiet.Stop()
		defer quiet.Stop()
		var settleUntil time.Time
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Op == fsnotify.Chmod {
					continue
				}
				// Any change in the directory: the content decides (changed).
				wait := reloadDebounce
				if ev.Has(fsnotify.Write) && filepath.Clean(ev.Name) == filepath.Clean(r.path) {
					// Written in place: the writer may be between two parts,
					// and a prefix can be a valid policy that allows what
					// the whole file denies. Wait until it stays quiet.
					settleUntil = time.Now().Add(inPlaceSettle)
				}
				wait = max(wait, time.Until(settleUntil))
				quiet.Reset(wait)
			case <-quiet.C:
				r.changed()
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				r.log.Error("watching the policy file failed; SIGHUP still reloads it", "error", err.Error())
			}
		}
	}()
	return func() { w.Close(); <-done }, nil
}
