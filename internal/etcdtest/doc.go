// Package etcdtest starts a real single-member etcd server in-process for
// tests: 127.0.0.1 only, free ports, data in t.TempDir(), logs silenced. The
// member can be stopped and restarted on the same data directory and ports,
// so tests can exercise an etcd outage and recovery.
//
// It imports etcd's embed server and client; it is for tests only.
package etcdtest
