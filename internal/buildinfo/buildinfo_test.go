package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		reason string
		bi     debug.BuildInfo
		want   string
	}{
		{"a tagged, stamped build", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}},
			"v1.2.3 (rev 0123456789ab, go1.26.8)"},
		{"a checkout with local changes", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) (rev 0123456789ab-dirty, go1.26.8)"},
		{"-buildvcs=false: no revision stamped", debug.BuildInfo{GoVersion: "go1.26.8"},
			"(devel) (rev unknown, go1.26.8)"},
	} {
		if got := fromBuildInfo(&tc.bi).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
		}
	}
	if Read().GoVersion == "" {
		t.Error("Read in a test binary: no Go version")
	}
}

func TestImplementationVersion(t *testing.T) {
	for _, tc := range []struct {
		reason string
		in     Info
		want   string
	}{
		{"a tagged build names its tag", Info{Version: "v1.2.3", Revision: "0123456789abcdef"}, "v1.2.3"},
		{"a checkout names its revision", Info{Version: "(devel)", Revision: "0123456789abcdef"}, "devel+0123456789ab"},
		{"local changes show", Info{Version: "(devel)", Revision: "0123456789abcdef", Modified: true}, "devel+0123456789ab-dirty"},
		{"no revision stamped", Info{Version: "(devel)"}, "devel"},
		{"no build info at all", Info{Version: "unknown"}, "devel"},
	} {
		if got := tc.in.ImplementationVersion(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
		}
	}
}
