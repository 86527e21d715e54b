package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionString reports the module version and VCS revision the binary was
// built from, as recorded by the Go toolchain.
func versionString() string {
	v, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return fmt.Sprintf("hermesd %s %s %s/%s %s", v, rev, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
