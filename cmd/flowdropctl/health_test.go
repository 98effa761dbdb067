package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// TestHealth: SERVING is exit 0 without credentials (a container health
// check has none), a gateway shutting down or gone is exit 1.
func TestHealth(t *testing.T) {
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(authPolicy("")))
	for _, tc := range []struct {
		reason   string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"a serving gateway, no credentials needed", []string{"health", "--addr", env.Addr}, 0, "SERVING"},
		{"nothing listens there", []string{"health", "--addr", gatewaytest.ClosedAddr(t), "--timeout", "500ms"}, 1, ""},
		{"arguments are usage errors", []string{"health", "--addr", env.Addr, "extra"}, 2, ""},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, strings.NewReader(""), &out, &errb); code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) {
			t.Errorf("%v: exit %d, stdout %q (stderr %q); want %d and %q (%s)", tc.args, code, out.String(), errb.String(), tc.wantCode, tc.wantOut, tc.reason)
		}
	}

	// Shutting down: health turns NOT_SERVING before the listener closes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	env.Gateway.Close(ctx)
	var out, errb bytes.Buffer
	if code := run([]string{"health", "--addr", env.Addr, "--timeout", "500ms"}, strings.NewReader(""), &out, &errb); code != 1 {
		t.Errorf("after Close: exit %d, stdout %q; want 1", code, out.String())
	}
}

// TestVersion: --version (and `version`) print the build and exit 0.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		var out, errb bytes.Buffer
		if code := run([]string{arg}, strings.NewReader(""), &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "flowdropctl ") {
			t.Errorf("%s: exit %d, stdout %q", arg, code, out.String())
		}
	}
}
