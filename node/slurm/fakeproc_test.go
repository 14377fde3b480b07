package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeProc is a proc filesystem in a temporary directory, holding the
// files JobOfProcess reads.
type fakeProc struct {
	t    testing.TB
	root string
}

func newFakeProc(t testing.TB) *fakeProc {
	return &fakeProc{t: t, root: t.TempDir()}
}

// proc is one fake process.
type proc struct {
	pid, ppid int
	comm      string
	start     uint64
	uid       int
	cgroup    string   // the text of /proc/PID/cgroup
	env       []string // K=V
	cmdline   string   // as read: a title, or NUL-separated arguments
}

// add writes p's files (over any earlier ones of its PID).
func (f *fakeProc) add(p proc) {
	f.t.Helper()
	dir := filepath.Join(f.root, strconv.Itoa(p.pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if p.comm == "" {
		p.comm = "python3"
	}
	// Fields 3 to 22 of stat: state, ppid, then 17 others, then starttime.
	stat := fmt.Sprintf("%d (%s) S %d %s %d 0 0", p.pid, p.comm, p.ppid, strings.Repeat("0 ", 17), p.start)
	status := fmt.Sprintf("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n", p.comm, p.uid, p.uid, p.uid, p.uid)
	env := strings.Join(p.env, "\x00")
	if env != "" {
		env += "\x00"
	}
	for name, text := range map[string]string{"stat": stat, "status": status, "cgroup": p.cgroup, "environ": env, "cmdline": p.cmdline} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
}

// remove makes process pid gone.
func (f *fakeProc) remove(pid int) {
	if err := os.RemoveAll(filepath.Join(f.root, strconv.Itoa(pid))); err != nil {
		f.t.Fatal(err)
	}
}

// Cgroup texts as Slurm's plugins leave them.
const (
	cgroupV1 = `12:memory:/slurm/uid_1000/job_4242/step_0/task_0
11:devices:/slurm/uid_1000/job_4242/step_0
5:freezer:/slurm/uid_1000/job_4242/step_0
1:name=systemd:/system.slice/slurmd.service
`
	cgroupV1Node = "4:cpuset:/slurm_node07/uid_1000/job_77/step_batch\n"
	cgroupV2     = "0::/system.slice/slurmstepd.scope/job_31337/step_0/user/task_0\n"
	cgroupV2Node = "0::/system.slice/node07_slurmstepd.scope/job_8/step_extern/slurm\n"
	cgroupDocker = "0::/system.slice/docker-" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + ".scope\n"
	cgroupUser   = "0::/user.slice/user-1000.slice/session-3.scope\n"
)
