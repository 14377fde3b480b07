package jobs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/gpu"
)

// procRoot is where processes are read (a test may point it elsewhere).
var procRoot = "/proc"

// dockerScope finds a Docker container's ID in a line of /proc/PID/cgroup:
// ".../docker-ID.scope" (systemd cgroup driver) or ".../docker/ID"
// (cgroupfs), in cgroup v1 or v2.
var dockerScope = regexp.MustCompile(`(?:/docker-|/docker/)([0-9a-f]{64})(?:\.scope)?(?:/|$)`)

// containerOfPID returns the ID of the Docker container process pid runs
// in, or "" when it runs in none (or is gone).
func containerOfPID(pid uint32) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"))
	if err != nil {
		return ""
	}
	return containerInCgroup(string(b))
}

// containerInCgroup returns the container ID named in the text of a
// /proc/PID/cgroup file, or "".
func containerInCgroup(text string) string {
	for _, line := range strings.Split(text, "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if m := dockerScope.FindStringSubmatch(parts[2]); m != nil {
			return m[1]
		}
	}
	return ""
}

// mapProcesses names, for each GPU process, the labpool job whose
// container it runs in and the job's owner; a process in no labpool
// container keeps both empty ("outside labpool").
func (m *Manager) mapProcesses(gs []gpu.Stats) {
	type holder struct{ container, job, owner string }
	var holders []holder
	for i := range gs {
		for k := range gs[i].Processes {
			p := &gs[i].Processes[k]
			c := containerOfPID(p.PID)
			if c == "" {
				continue
			}
			if holders == nil {
				holders = []holder{}
				m.mu.Lock()
				for _, j := range m.jobs {
					if j.Container != "" {
						holders = append(holders, holder{j.Container, j.ID, j.Owner})
					}
				}
				m.mu.Unlock()
			}
			for _, h := range holders {
				if strings.HasPrefix(c, h.container) { // the engine's full ID, or a short one
					p.Job, p.Owner = h.job, h.owner
				}
			}
		}
	}
}
