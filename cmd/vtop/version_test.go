package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}}
	dirty := append(append([]debug.BuildSetting{}, rev...), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, c := range []struct {
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"v1.0.0", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, "v1.0.0"}, // -ldflags wins
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, "v0.9.0"},    // go install …@v0.9.0
		// go install of an untagged module: its pseudo-version is its version.
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124093000-1a2b3c4d5e6f"}}, "v0.0.0-20261124093000-1a2b3c4d5e6f"},
		// go build in a checkout: Go stamps a pseudo-version from git; the
		// README's form is the revision (issue 21: they disagreed).
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124093000-1a2b3c4d5e6f+dirty"}, Settings: dirty}, "dev-1a2b3c4d5e6f-dirty"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261124093000-1a2b3c4d5e6f"}, Settings: rev}, "dev-1a2b3c4d5e6f"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev-1a2b3c4d5e6f"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: dirty}, "dev-1a2b3c4d5e6f-dirty"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"}, // go run: nothing recorded
		{"dev", nil, "dev"},
	} {
		if got := versionOf(c.stamped, c.bi); got != c.want {
			t.Errorf("versionOf(%q, %+v) = %q, want %q", c.stamped, c.bi, got, c.want)
		}
	}
}
