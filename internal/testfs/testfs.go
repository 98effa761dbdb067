// Package testfs gives tests a real filesystem that can be filled: a small
// tmpfs mounted on a fresh directory (root only; CI runs as root and must
// not skip), unmounted at cleanup.
package testfs

import (
	"os"
	"os/exec"
	"testing"
)

// Tmpfs mounts a tmpfs of size (e.g. "64k") on a new directory and returns
// it. Without root it skips — or fails when CI=true, where it must run.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test mounts a tmpfs to fill a real filesystem and needs root; CI must run it as root")
		}
		t.Skip("skipped: mounting a tmpfs (a real full filesystem) needs root; run as root or in CI")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}
