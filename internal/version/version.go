// Package version says which build of dedupd is running, from what the Go
// toolchain stamps into every binary: the module version for a
// `go install …@vX`, and the VCS revision for a build made with
// -buildvcs=true in a checkout (the Makefile, CI and image builds). It reads
// nothing else, so a plain `go build` reports "(devel)" with no revision
// rather than anything made up.
package version

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// Info identifies one build.
type Info struct {
	// Version is the module version ("v1.2.0", a pseudo-version, or
	// "(devel)" for a build from a checkout).
	Version string `json:"version"`
	// Revision is the VCS commit, when the build stamped one.
	Revision string `json:"revision,omitempty"`
	// Time is the commit's time (RFC 3339), when stamped.
	Time string `json:"time,omitempty"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
}

// unknown is the version of a binary that carries no build information
// (one built without module support).
const unknown = "unknown"

// Get is the running binary's build.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: unknown}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo reads a build's identity from its build information.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if info.Version == "" {
		info.Version = unknown
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one-line form `--version` prints: the version, then the
// short revision (with "+dirty" for a modified checkout) and the toolchain.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		fmt.Fprintf(&b, " (%s", rev)
		if i.Modified {
			b.WriteString("+dirty")
		}
		b.WriteString(")")
	}
	if i.GoVersion != "" {
		b.WriteString(" " + i.GoVersion)
	}
	return b.String()
}

// Print writes the running build for `--version`: one line naming the
// program, or with format "json" one JSON object (the Info fields and
// "program"). "table" is dedupctl's name for the text form.
func Print(w io.Writer, program, format string) error {
	info := Get()
	switch format {
	case "", "text", "table":
		_, err := fmt.Fprintf(w, "%s %s\n", program, info)
		return err
	case "json":
		return json.NewEncoder(w).Encode(struct {
			Program string `json:"program"`
			Info
		}{program, info})
	}
	return fmt.Errorf("unknown output format %q: want text or json", format)
}
