package slurm

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A real Slurm 22.05 (Debian's slurm-wlm and munge) for the executor's
// tests: munged on its own socket, slurmctld and two slurmd (nodes slm-a
// and slm-b, each with 4 fake GPUs: gres.conf File= character devices)
// in a network namespace of their own, with the whole configuration in a
// temporary directory. Started once per test binary, by the first test
// that asks; TestMain stops it.

var (
	realOnce    sync.Once
	realCluster *testCluster
	realErr     error
)

type testCluster struct {
	dir  string
	ns   string
	pids []int // munged, slurmctld, slurmd...
}

func TestMain(m *testing.M) {
	code := m.Run()
	if realCluster != nil {
		realCluster.stop()
	}
	os.Exit(code)
}

// needSlurm returns the test cluster, or skips (fails in CI) when this
// machine cannot run one.
func needSlurm(t testing.TB) *testCluster {
	t.Helper()
	var missing []string
	for _, b := range []string{"slurmctld", "slurmd", "munged", "sbatch", "squeue", "sinfo", "scontrol", "scancel", "nsenter", "ip", "runuser", "mknod"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "a real Slurm cluster needs root (network namespace, munge, slurmd)"
	case len(missing) > 0:
		why = "a real Slurm cluster needs " + strings.Join(missing, ", ") + " (apt-get install slurm-wlm munge)"
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	realOnce.Do(func() { realCluster, realErr = startCluster() })
	if realErr != nil {
		t.Fatalf("start slurm: %v", realErr)
	}
	return realCluster
}

func sh(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func startCluster() (*testCluster, error) {
	dir, err := os.MkdirTemp("", "slm-")
	if err != nil {
		return nil, err
	}
	var nonce [3]byte
	_, _ = rand.Read(nonce[:])
	c := &testCluster{dir: dir, ns: fmt.Sprintf("slm-%x", nonce)}
	if err := c.start(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *testCluster) start() error {
	d := c.dir
	if err := os.Chmod(d, 0o755); err != nil {
		return err
	}
	// A non-loopback address: without one, getaddrinfo (AI_ADDRCONFIG)
	// resolves nothing, not even 127.0.0.1.
	for _, cmd := range [][]string{
		{"ip", "netns", "add", c.ns},
		{"ip", "-n", c.ns, "link", "set", "lo", "up"},
		{"ip", "-n", c.ns, "link", "add", "s0", "type", "veth", "peer", "name", "s1"},
		{"ip", "-n", c.ns, "addr", "add", "10.219.0.1/24", "dev", "s0"},
		{"ip", "-n", c.ns, "link", "set", "s0", "up"},
		{"ip", "-n", c.ns, "link", "set", "s1", "up"},
	} {
		if err := sh(cmd...); err != nil {
			return err
		}
	}
	for _, sub := range []string{"munge", "state", "spool/slm-a", "spool/slm-b", "log", "dev"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
			return err
		}
	}
	m := filepath.Join(d, "munge")
	key := make([]byte, 1024)
	_, _ = rand.Read(key)
	if err := os.WriteFile(filepath.Join(m, "munge.key"), key, 0o400); err != nil {
		return err
	}
	for _, cmd := range [][]string{
		{"chown", "-R", "munge:munge", m}, {"chmod", "0711", m},
	} {
		if err := sh(cmd...); err != nil {
			return err
		}
	}
	for _, n := range []string{"a", "b"} {
		for i := range 4 {
			if err := sh("mknod", filepath.Join(d, "dev", fmt.Sprintf("%s-gpu%d", n, i)), "c", "1", "3"); err != nil {
				return err
			}
		}
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`ClusterName=slm
SlurmctldHost=%[2]s(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=%[1]s/munge/munge.socket.2
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool/%%n
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/slurmd-%%n.pid
SlurmctldLogFile=%[1]s/log/slurmctld.log
SlurmdLogFile=%[1]s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
NodeName=slm-a NodeAddr=127.0.0.1 Port=16821 CPUs=2 RealMemory=2000 Gres=gpu:fake:4 State=UNKNOWN
NodeName=slm-b NodeAddr=127.0.0.1 Port=16822 CPUs=2 RealMemory=2000 Gres=gpu:fake:4 State=UNKNOWN
PartitionName=gpu Nodes=slm-a,slm-b Default=YES MaxTime=INFINITE State=UP
`, d, host)
	gres := fmt.Sprintf("AutoDetect=off\nNodeName=slm-a Name=gpu Type=fake File=%[1]s/dev/a-gpu[0-3]\nNodeName=slm-b Name=gpu Type=fake File=%[1]s/dev/b-gpu[0-3]\n", d)
	if err := os.WriteFile(filepath.Join(d, "slurm.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, "gres.conf"), []byte(gres), 0o644); err != nil {
		return err
	}
	if err := sh("runuser", "-u", "munge", "--", "munged", "--socket="+m+"/munge.socket.2",
		"--key-file="+m+"/munge.key", "--pid-file="+m+"/munged.pid", "--log-file="+m+"/munged.log", "--seed-file="+m+"/munged.seed"); err != nil {
		return err
	}
	if err := c.readPid(filepath.Join(m, "munged.pid")); err != nil {
		return err
	}
	netns := "--net=/var/run/netns/" + c.ns
	conff := filepath.Join(d, "slurm.conf")
	if err := sh("nsenter", netns, "slurmctld", "-f", conff); err != nil {
		return err
	}
	if err := c.readPid(filepath.Join(d, "slurmctld.pid")); err != nil {
		return err
	}
	for _, n := range []string{"slm-a", "slm-b"} {
		if err := sh("nsenter", netns, "slurmd", "-f", conff, "-N", n); err != nil {
			return err
		}
		if err := c.readPid(filepath.Join(d, "slurmd-"+n+".pid")); err != nil {
			return err
		}
	}
	// Ready when both nodes are idle.
	run := c.runner()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := run.Run(context.Background(), "sinfo", "--noheader", "--Node", "--format=%N %t")
		if err == nil && strings.Count(string(out), "idle") == 2 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slurm nodes not idle after 30 s: %s %v", out, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readPid waits for a daemon's pid file (daemons write it a moment after
// they return).
func (c *testCluster) readPid(path string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			c.pids = append(c.pids, pid)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no pid in %s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *testCluster) runner() *CmdRunner {
	return &CmdRunner{Conf: filepath.Join(c.dir, "slurm.conf"), Wrap: []string{"nsenter", "--net=/var/run/netns/" + c.ns}, Timeout: 20 * time.Second}
}

func (c *testCluster) config(t testing.TB) Config {
	return Config{Conf: filepath.Join(c.dir, "slurm.conf"), Wrap: []string{"nsenter", "--net=/var/run/netns/" + c.ns},
		StateDir: t.TempDir(), Tick: 200 * time.Millisecond, Timeout: 20 * time.Second}
}

func (c *testCluster) stop() {
	for i := len(c.pids) - 1; i >= 0; i-- {
		p := c.pids[i]
		if syscall.Kill(p, syscall.SIGTERM) != nil {
			continue
		}
		for range 100 { // wait for it to go, 5 s at most
			if !alive(p) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	_ = sh("ip", "netns", "del", c.ns)
	os.RemoveAll(c.dir)
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
