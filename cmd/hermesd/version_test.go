package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildStamp(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name  string
		bi    *debug.BuildInfo
		ok    bool
		want  []string
		avoid []string
	}{
		{"CheckoutBuild", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", rev, "vcs.time", "2026-12-01T15:04:05Z", "vcs.modified", "true")}, true,
			[]string{"hermesd dev-0123456789ab (commit 0123456789ab+dirty, 2026-12-01T15:04:05Z) go"}, []string{"(devel)"}},
		{"ReleasedModule", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("vcs.revision", rev)}, true,
			[]string{"hermesd v1.2.3 (commit 0123456789ab) "}, []string{"dirty", "(devel)"}},
		{"NoBuildInfo", nil, false, []string{"hermesd dev (commit unknown) "}, []string{"(devel)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readBuildStamp(c.bi, c.ok).String()
			for _, w := range c.want {
				if !strings.HasPrefix(got, w) {
					t.Errorf("got %q, want prefix %q", got, w)
				}
			}
			for _, a := range c.avoid {
				if strings.Contains(got, a) {
					t.Errorf("got %q, which contains %q", got, a)
				}
			}
		})
	}
}
