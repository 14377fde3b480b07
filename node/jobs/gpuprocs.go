package jobs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/alloc"
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

// mapProcesses names in held, for each GPU process that runs in a labpool
// job's container, the job and its owner; a process in no labpool
// container stays unnamed ("outside labpool").
func (m *Manager) mapProcesses(gs []gpu.Stats, held *alloc.Holding) {
	var holders []alloc.Holder
	var containers []string
	for i := range gs {
		for _, p := range gs[i].Processes {
			c := containerOfPID(p.PID)
			if c == "" {
				continue
			}
			if containers == nil {
				containers = []string{}
				m.mu.Lock()
				for _, j := range m.jobs {
					if j.Container != "" {
						containers = append(containers, j.Container)
						holders = append(holders, alloc.Holder{Kind: alloc.Job, ID: j.ID, Member: j.Owner})
					}
				}
				m.mu.Unlock()
			}
			for k, jc := range containers {
				if inContainer(c, jc) {
					held.HoldProc(p.PID, holders[k])
				}
			}
		}
	}
}

// inContainer reports whether container ID c (read from a process's
// cgroup) is the job's container jc: the engine's full ID, or a short one.
func inContainer(c, jc string) bool { return c != "" && jc != "" && strings.HasPrefix(c, jc) }
