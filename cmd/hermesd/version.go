package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Build stamps for builds without VCS information (a container build sees
// no .git; GOFLAGS=-buildvcs=false turns it off): set with
// -ldflags "-X main.buildCommit=<rev>[+dirty] -X main.buildTime=<RFC 3339>",
// as scripts/run.sh and the Dockerfile do.
// They are written once, by the linker; nothing assigns them at run time.
var (
	buildVersion string
	buildCommit  string
	buildTime    string
)

// buildStamp is what a binary knows about where it came from.
type buildStamp struct {
	Version, Commit, Time string
	Dirty                 bool
}

// readBuildStamp takes the version, commit and build time from the build
// info the Go toolchain records (vcs.revision, vcs.time, vcs.modified), or
// from the link-time stamps when there is none.
func readBuildStamp(bi *debug.BuildInfo, ok bool) buildStamp {
	s := buildStamp{Version: buildVersion, Commit: buildCommit, Time: buildTime}
	if ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" && s.Version == "" {
			s.Version = v
		}
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				if s.Commit == "" {
					s.Commit = kv.Value
				}
			case "vcs.time":
				if s.Time == "" {
					s.Time = kv.Value
				}
			case "vcs.modified":
				s.Dirty = kv.Value == "true"
			}
		}
	}
	if c, ok := strings.CutSuffix(s.Commit, "+dirty"); ok {
		s.Commit, s.Dirty = c, true
	}
	if s.Version == "" {
		// A build from a checkout: name it by its commit rather than
		// "(devel)", which says nothing.
		s.Version = "dev"
		if s.Commit != "" {
			s.Version = "dev-" + short(s.Commit)
		}
	}
	return s
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// String is one line: "hermesd dev-0123456789ab (commit 0123456789ab+dirty,
// 2026-12-01T15:04:05Z) go1.26 linux/amd64".
func (s buildStamp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hermesd %s (", s.Version)
	if s.Commit != "" {
		b.WriteString("commit " + short(s.Commit))
		if s.Dirty {
			b.WriteString("+dirty")
		}
	} else {
		b.WriteString("commit unknown")
	}
	if t, err := time.Parse(time.RFC3339, s.Time); err == nil {
		b.WriteString(", " + t.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, ") %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// versionString reports where this binary came from.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	return readBuildStamp(bi, ok).String()
}
