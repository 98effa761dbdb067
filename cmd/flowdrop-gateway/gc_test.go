package main

import (
	"io"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestGCPercent(t *testing.T) {
	// The collector's setting is process-wide: put back what the test found.
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	for _, tc := range []struct {
		reason  string
		args    []string
		gogc    string // GOGC in the environment
		want    int    // the collector's percentage afterwards
		wantSrc string
		wantErr string
	}{
		{reason: "no flag: the gateway's default", want: defaultGCPercent, wantSrc: "--gc-percent"},
		{reason: "the flag sets it", args: []string{"--gc-percent", "150"}, want: 150, wantSrc: "--gc-percent"},
		{reason: "GOGC in the environment wins over the flag", args: []string{"--gc-percent", "150"}, gogc: "250", want: 100, wantSrc: "GOGC"},
		{reason: "zero would mean collecting all the time", args: []string{"--gc-percent", "0"}, wantErr: "--gc-percent 0"},
		{reason: "negative would turn collection off", args: []string{"--gc-percent", "-1"}, wantErr: "--gc-percent -1"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			debug.SetGCPercent(100)
			_, _, err := parseFlags(append([]string{"--auth-off"}, tc.args...), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, src := applyGCPercent(gcPercent, func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			})
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("collector at %d%%, want %d%%", got, tc.want)
			}
			if !strings.Contains(src, tc.wantSrc) {
				t.Errorf("source %q, want it to name %q", src, tc.wantSrc)
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	// The limit is process-wide: put back what the test found.
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })

	for _, tc := range []struct {
		reason  string
		args    []string
		env     string // GOMEMLIMIT in the environment
		want    int64  // the runtime's limit afterwards
		wantSrc string
		wantErr string
	}{
		{reason: "no flag: the gateway's default", want: defaultMemoryLimit, wantSrc: "--memory-limit"},
		{reason: "the flag sets it, with GOMEMLIMIT's units", args: []string{"--memory-limit", "2GiB"}, want: 2 << 30, wantSrc: "--memory-limit"},
		{reason: "plain bytes", args: []string{"--memory-limit", "314572800"}, want: 300 << 20, wantSrc: "--memory-limit"},
		{reason: "off is no limit", args: []string{"--memory-limit", "off"}, want: math.MaxInt64, wantSrc: "--memory-limit"},
		{reason: "GOMEMLIMIT in the environment wins over the flag", args: []string{"--memory-limit", "2GiB"}, env: "300MiB", want: 12345 << 20, wantSrc: "GOMEMLIMIT"},
		{reason: "a limit under 1MiB would collect all the time", args: []string{"--memory-limit", "512KiB"}, wantErr: "at least 1MiB"},
		{reason: "not a size", args: []string{"--memory-limit", "lots"}, wantErr: "at least 1MiB"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			debug.SetMemoryLimit(12345 << 20)
			_, _, err := parseFlags(append([]string{"--auth-off"}, tc.args...), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, src := applyMemoryLimit(memoryLimit, func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.env
				}
				return ""
			})
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("limit %d, want %d", got, tc.want)
			}
			if !strings.Contains(src, tc.wantSrc) {
				t.Errorf("source %q, want it to name %q", src, tc.wantSrc)
			}
		})
	}
}

// TestLiveHeapWatch: one warning when the live heap crosses half the
// limit, none while it stays there, another only after it fell back under
// a quarter and crossed again; nothing without a limit.
func TestLiveHeapWatch(t *testing.T) {
	const mib = 1 << 20
	steps := []struct {
		reason string
		live   uint64
		warns  int // warnings so far
	}{
		{"well under half: quiet", 10 * mib, 0},
		{"crosses half: one warning", 40 * mib, 1},
		{"still over: no second warning", 60 * mib, 1},
		{"under half but over a quarter: still armed off", 20 * mib, 1},
		{"over again: nothing new", 40 * mib, 1},
		{"under a quarter: re-armed", 10 * mib, 1},
		{"crosses again: a second warning", 33 * mib, 2},
	}
	var live uint64
	var got []string
	w := &liveHeapWatch{limit: 64 * mib, live: func() uint64 { return live }, warn: func(msg string, args ...any) { got = append(got, msg) }}
	for _, s := range steps {
		live = s.live
		w.check()
		if len(got) != s.warns {
			t.Fatalf("%s: %d warnings, want %d", s.reason, len(got), s.warns)
		}
	}
	if !strings.Contains(got[0], "--memory-limit") {
		t.Errorf("warning %q does not say what to raise", got[0])
	}
	off := &liveHeapWatch{limit: math.MaxInt64, live: func() uint64 { return 1 << 40 }, warn: func(string, ...any) { t.Error("warned with no limit") }}
	off.check()
}
