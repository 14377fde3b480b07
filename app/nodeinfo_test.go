package app

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/host"
)

// TestNodeInfoOSArch: a machine's OS and architecture are its own claim in
// its node record; a claim that is not a short Go name (a pool member can
// write anything there: terminal escapes, a screenful) is shown as
// unknown, and never reaches `nodes` or the UI.
func TestNodeInfoOSArch(t *testing.T) {
	for _, tc := range []struct {
		goos, arch         string
		wantGOOS, wantArch string
	}{
		{"darwin", "arm64", "darwin", "arm64"},
		{"windows", "amd64", "windows", "amd64"},
		{"linux", "arm64", "linux", "arm64"},
		{"", "", "", ""}, // an agent before this field
		{"linux\x1b[2J", "amd64\n", "", ""},
		{strings.Repeat("x", 4096), "arm64", "", "arm64"},
		{"Linux", "ARM64", "", ""},
	} {
		got := nodeInfo(agent.Info{Host: host.Info{GOOS: tc.goos, Arch: tc.arch}})
		if got.GOOS != tc.wantGOOS || got.Arch != tc.wantArch {
			t.Errorf("claim %.40q/%.40q: shown %.40q/%.40q, want %q/%q", tc.goos, tc.arch, got.GOOS, got.Arch, tc.wantGOOS, tc.wantArch)
		}
	}
}
