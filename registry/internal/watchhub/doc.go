// Package watchhub is the event history and watcher fan-out shared by the
// single-process stores (memstore, boltstore): a bounded replay history and
// one buffered channel per watcher. A write never blocks on a watcher: one
// whose buffer is full has its channel closed (the watch is lost) and must
// re-list and watch again, as after any watch failure.
//
// It imports the registry only.
package watchhub
