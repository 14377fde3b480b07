package jobs

import (
	"regexp"
	"strings"
	"testing"
)

var fullID = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzContainerInCgroup: whatever /proc/PID/cgroup holds, the answer is
// "" or a full container ID that the text names.
func FuzzContainerInCgroup(f *testing.F) {
	id := strings.Repeat("ab12", 16)
	for _, s := range []string{
		"0::/system.slice/docker-" + id + ".scope\n",
		"12:memory:/docker/" + id + "\n",
		"0::/user.slice/user-1000.slice/session-3.scope\n",
		"0::/docker/" + id[:12],
		"::::", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := containerInCgroup(text)
		if got != "" && (!fullID.MatchString(got) || !strings.Contains(text, got)) {
			t.Errorf("containerInCgroup(%q) = %q", text, got)
		}
	})
}
