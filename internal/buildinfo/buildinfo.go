// Package buildinfo says which build is running: the module version and
// the VCS revision Go stamped into the binary (runtime/debug.ReadBuildInfo),
// for --version, the start-up log, /readyz and the flowdrop_build_info
// metric.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Info is one binary's build.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.3, a
	// pseudo-version, or "(devel)" for a build from a checkout.
	Version string
	// Revision is the VCS commit, "" when the build was not stamped (e.g.
	// -buildvcs=false); Modified says the work tree had local changes.
	Revision string
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Read returns the running binary's build (read once).
var Read = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return fromBuildInfo(bi)
})

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// ShortRevision is the revision's first 12 characters, with "-dirty" for a
// modified work tree; "unknown" when not stamped.
func (in Info) ShortRevision() string {
	r := in.Revision
	if r == "" {
		return "unknown"
	}
	if len(r) > 12 {
		r = r[:12]
	}
	if in.Modified {
		r += "-dirty"
	}
	return r
}

// String is the one-line form --version prints: "v1.2.3 (rev 0123456789ab, go1.26.8)".
func (in Info) String() string {
	return in.Version + " (rev " + in.ShortRevision() + ", " + in.GoVersion + ")"
}

// ImplementationVersion is the version a protocol's implementation field
// carries (MCP serverInfo.version): the module version of a tagged build,
// otherwise "devel" with the revision when stamped ("devel+0123456789ab").
func (in Info) ImplementationVersion() string {
	if in.Version != "" && in.Version != "(devel)" && in.Version != "unknown" {
		return in.Version
	}
	if in.Revision == "" {
		return "devel"
	}
	return "devel+" + in.ShortRevision()
}
