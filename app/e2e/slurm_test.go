//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// TestSlurmCluster runs a real Slurm cluster (slurmctld in the cluster
// agent's namespace, two slurmd each in its own, four fake GPUs each) and
// drives it from a laptop that joined the pool: the cluster's card, GPUs
// as GRES, the queue with Slurm's reason, a job on both nodes, stop, an
// agent SIGKILLed that adopts its Slurm jobs, tunnels to a job's node, and
// a launch the cluster's policy refuses before sbatch runs.
func TestSlurmCluster(t *testing.T) {
	l := newLAN(t, "cluster", "laptop")
	cl, laptop := l.host("cluster"), l.host("laptop")
	c := slurmtest.Start(t, slurmtest.Options{Net: &slurmtest.Net{
		Switch: l.prefix + "sw", Bridge: "br0", Controller: cl.ns, ControllerAddr: cl.ip,
		NodeAddrs: []string{fmt.Sprintf("10.231.%d.101/24", l.subnet), fmt.Sprintf("10.231.%d.102/24", l.subnet)},
	}})
	cl.env = append(cl.env, c.Env()...)
	jobUser := slurmtest.AddUser(t)
	clusterAgent := func() {
		cl.start("agent", "--name", "cluster", "--iface", "eth0", "--listen", ":7420", "--slurm", "--slurm-job-user", jobUser)
	}
	clusterAgent()
	laptop.agent()
	cl.waitDaemon()
	laptop.waitDaemon()
	joinAll(t, cl, laptop) // the cluster's agent creates the pool: the laptop is a member
	waitFor(t, 20*time.Second, "the cluster live on the laptop", func() error { return liveNodes(laptop, "cluster") })
	s := &slurmSession{c: c, laptop: laptop}

	t.Run("card: two nodes and their GPUs", func(t *testing.T) {
		var card string
		waitFor(t, 10*time.Second, "the cluster's card on the laptop", func() error {
			n, err := s.card(t)
			if err != nil {
				return err
			}
			var got []string
			for _, cn := range n.Nodes {
				for _, g := range cn.GPUs {
					got = append(got, fmt.Sprintf("%s %s:%d", cn.Name, g.Type, g.Total))
				}
			}
			slices.Sort(got)
			card = strings.Join(got, ", ")
			if want := "node1 fake:4, node2 fake:4"; card != want {
				return fmt.Errorf("card lists %q, want %q", card, want)
			}
			return nil
		})
	})

	t.Run("gres: two GPUs, two indices", func(t *testing.T) {
		out := mustCLI(t, laptop, "run", "--node", "cluster", "--gpus", "2", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
		id := lastLine(out)
		s.wait(t, id, "exited")
		logs := strings.TrimSpace(mustCLI(t, laptop, "logs", id))
		if !regexp.MustCompile(`^\d+,\d+$`).MatchString(logs) {
			t.Errorf("logs %q, want two GPU indices", logs)
		}
	})

	t.Run("two nodes, two GPUs each", func(t *testing.T) {
		id := lastLine(mustCLI(t, laptop, "run", "--node", "cluster", "--nodes", "2", "--gpus-per-node", "2", "--",
			"sh", "-c", `echo "$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES"`))
		j := s.wait(t, id, "exited")
		logs := mustCLI(t, laptop, "logs", id)
		for _, n := range []string{"node1", "node2"} {
			if !regexp.MustCompile(`(?m)^` + n + ` gpus=\d+,\d+$`).MatchString(logs) {
				t.Errorf("logs %q: no line of %s with two GPU indices", logs, n)
			}
		}
		if slices.Sort(j.Hosts); !slices.Equal(j.Hosts, []string{"node1", "node2"}) {
			t.Errorf("job ran on %v, want node1 and node2", j.Hosts)
		}
	})

	t.Run("queued with Slurm's reason, starts when stop frees the GPUs", func(t *testing.T) {
		hold := s.launch(t, jobs.Spec{Nodes: 2, GPUsPerNode: 4, Cmd: []string{"sleep", "600"}})
		h := s.wait(t, hold, "running")
		next := s.launch(t, jobs.Spec{GPUs: 2, Cmd: []string{"echo", "ran"}})
		// Slurm gives its reason at its next scheduling pass (None until then).
		waitFor(t, 10*time.Second, "the job queued with Slurm's reason", func() error {
			if q := s.wait(t, next, "queued"); !strings.Contains(q.Error, "Resources") {
				return fmt.Errorf("queued job says %q, want Slurm's reason (Resources)", q.Error)
			}
			return nil
		})
		if _, errOut, code := laptop.cli("stop", hold); code != 0 {
			t.Fatalf("stop: exit %d: %s", code, errOut)
		}
		waitFor(t, 10*time.Second, "squeue to agree that the job is cancelled", func() error {
			if st := s.squeueState(t, h.Container); st != "CANCELLED" {
				return fmt.Errorf("slurm job %s is %s", h.Container, st)
			}
			return nil
		})
		s.wait(t, next, "exited")
		if logs := strings.TrimSpace(mustCLI(t, laptop, "logs", next)); logs != "ran" {
			t.Errorf("logs of the job that waited: %q", logs)
		}
	})

	t.Run("agent SIGKILLed adopts its Slurm jobs", func(t *testing.T) {
		id := s.launch(t, jobs.Spec{GPUs: 1, Cmd: []string{"sleep", "600"}})
		before := s.wait(t, id, "running")
		cl.kill()
		clusterAgent()
		cl.waitDaemon()
		waitFor(t, 20*time.Second, "the cluster live again", func() error { return liveNodes(laptop, "cluster") })
		after := s.wait(t, id, "running")
		if after.Container != before.Container {
			t.Errorf("slurm job %s became %s", before.Container, after.Container)
		}
		if active := s.squeueActive(t); !slices.Equal(active, []string{before.Container}) {
			t.Errorf("squeue lists %v after the restart, want the one job %s", active, before.Container)
		}
		mustCLI(t, laptop, "stop", id)
		s.wait(t, id, "exited")
	})

	t.Run("a tunnel reaches its job on its node, no undeclared port", func(t *testing.T) {
		dir := jobDir(t)
		page := func(name string) []string {
			d := filepath.Join(dir, name)
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "index.html"), []byte("page of "+name+"\n"), 0o644)
			// The same port on both nodes: each tunnel must reach its own.
			return []string{"busybox", "httpd", "-f", "-p", "8080", "-h", d}
		}
		a := s.launch(t, jobs.Spec{GPUs: 4, Ports: []int{8080}, Cmd: page("a")})
		b := s.launch(t, jobs.Spec{GPUs: 4, Ports: []int{8080}, Cmd: page("b")})
		ja, jb := s.wait(t, a, "running"), s.wait(t, b, "running")
		if len(ja.Hosts) != 1 || len(jb.Hosts) != 1 || ja.Hosts[0] == jb.Hosts[0] {
			t.Fatalf("jobs on %v and %v, want one node each (four GPUs each)", ja.Hosts, jb.Hosts)
		}
		for id, want := range map[string]string{a: "page of a", b: "page of b"} {
			url := lastLine(mustCLI(t, laptop, "open", id, "8080"))
			waitFor(t, 10*time.Second, "the page through "+url, func() error {
				out, err := exec.Command("ip", "netns", "exec", laptop.ns, "curl", "-sf", "--max-time", "5", url).CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != want {
					return fmt.Errorf("curl %s: %v %q, want %q", url, err, out, want)
				}
				return nil
			})
		}
		if out, errOut, code := laptop.cli("open", a, "6818"); code == 0 {
			t.Errorf("open of a port the job did not declare (slurmd's): exit 0: %s", out)
		} else if !strings.Contains(errOut, "port") {
			t.Errorf("refusal %q does not name the port", errOut)
		}
		mustCLI(t, laptop, "stop", a)
		mustCLI(t, laptop, "stop", b)
		s.wait(t, a, "exited")
		s.wait(t, b, "exited")
	})

	t.Run("a tunnel reaches no port its job did not open", func(t *testing.T) {
		// A service of the node outside any job (as sshd or slurmd are), and
		// a job's page; then a job of the same node that declares both
		// ports without opening them.
		dir := jobDir(t)
		os.WriteFile(filepath.Join(dir, "index.html"), []byte("page of the node\n"), 0o644)
		a := s.launch(t, jobs.Spec{GPUs: 2, Ports: []int{8080}, Cmd: []string{"sh", "-c", "mkdir -p " + dir + "/a && echo page of a > " + dir + "/a/index.html && exec busybox httpd -f -p 8080 -h " + dir + "/a"}})
		ja := s.wait(t, a, "running")
		node, ok := c.Node(ja.Hosts[0])
		if !ok {
			t.Fatalf("job a runs on %v, not a node of the cluster", ja.Hosts)
		}
		svc := c.CommandOn(context.Background(), node, "busybox", "httpd", "-f", "-p", "9099", "-h", dir)
		if err := svc.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { svc.Process.Kill(); svc.Wait() }()
		spy := s.launch(t, jobs.Spec{GPUs: 2, Ports: []int{8080, 9099}, Cmd: []string{"sleep", "600"}})
		if j := s.wait(t, spy, "running"); !slices.Equal(j.Hosts, ja.Hosts) {
			t.Fatalf("the spying job runs on %v, job a on %v: want one node", j.Hosts, ja.Hosts)
		}
		for _, port := range []string{"8080", "9099"} {
			out, errOut, code := laptop.cli("open", spy, port)
			if code != 0 {
				continue // refused: what should happen
			}
			url := lastLine(out)
			got, _ := exec.Command("ip", "netns", "exec", laptop.ns, "curl", "-s", "--max-time", "5", url).CombinedOutput()
			if strings.Contains(string(got), "page of") {
				t.Errorf("a job's tunnel to port %s, which it never opened, reached %q (%s)", port, strings.TrimSpace(string(got)), errOut)
			}
		}
		mustCLI(t, laptop, "stop", a)
		mustCLI(t, laptop, "stop", spy)
		s.wait(t, a, "exited")
		s.wait(t, spy, "exited")
	})

	t.Run("a member the policy forbids is refused before sbatch", func(t *testing.T) {
		mustCLI(t, cl, "policy", "--launch", "admins")
		defer mustCLI(t, cl, "policy", "--launch", "members")
		before := s.squeueAll(t)
		out, errOut, code := laptop.cli("run", "--node", "cluster", "--", "true")
		if code == 0 || !strings.Contains(errOut, "admins") {
			t.Errorf("run by a member where only admins launch: exit %d %s%s, want a refusal naming the rule", code, out, errOut)
		}
		if after := s.squeueAll(t); !slices.Equal(after, before) {
			t.Errorf("squeue lists %v after the refusal, %v before: sbatch ran", after, before)
		}
	})
}

// jobDir is a directory of the test that jobs (their account, not the
// test's root) may traverse and write.
func jobDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// slurmSession is what TestSlurmCluster's steps share: the cluster, and
// the laptop that drives it.
type slurmSession struct {
	c      *slurmtest.Cluster
	laptop *host
}

// launch submits spec to the cluster from the laptop and returns the
// job's ID.
func (s *slurmSession) launch(t testing.TB, spec jobs.Spec) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j, err := s.laptop.client().Launch(ctx, app.LaunchRequest{Node: "cluster", Spec: spec})
	if err != nil {
		t.Fatalf("launch %+v: %v", spec, err)
	}
	return j.ID
}

// wait waits until job id is in state on the laptop and returns it.
func (s *slurmSession) wait(t testing.TB, id, state string) app.Job {
	t.Helper()
	var j app.Job
	waitFor(t, 20*time.Second, "job "+id+" "+state, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		if j, err = s.laptop.client().Job(ctx, id); err != nil {
			return err
		}
		if string(j.State) != state {
			return fmt.Errorf("state %s (%s)", j.State, j.Error)
		}
		return nil
	})
	return j
}

// handle waits until job id names its Slurm job and returns that ID.
func (s *slurmSession) handle(t testing.TB, id string) string {
	t.Helper()
	var h string
	waitFor(t, 20*time.Second, "job "+id+" submitted", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		j, err := s.laptop.client().Job(ctx, id)
		if err == nil && j.Container == "" {
			err = fmt.Errorf("no Slurm job yet (%s)", j.State)
		}
		h = j.Container
		return err
	})
	return h
}

// card is the cluster's card as the laptop's `nodes --json` shows it.
func (s *slurmSession) card(t testing.TB) (*slurm.Cluster, error) {
	out, errOut, code := s.laptop.cli("nodes", "--json")
	if code != 0 {
		return nil, fmt.Errorf("nodes --json: exit %d: %s", code, errOut)
	}
	var nodes []struct {
		Name    string         `json:"name"`
		Cluster *slurm.Cluster `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Name == "cluster" && n.Cluster != nil {
			return n.Cluster, nil
		}
	}
	return nil, fmt.Errorf("no card of the cluster in %s", out)
}

// squeueState is Slurm's state of its job id.
func (s *slurmSession) squeueState(t testing.TB, id string) string {
	return strings.TrimSpace(s.c.Run(t, "squeue", "--noheader", "--states=all", "--jobs", id, "--format=%T"))
}

// squeueActive lists the IDs of the jobs pending or running.
func (s *slurmSession) squeueActive(t testing.TB) []string {
	return strings.Fields(s.c.Run(t, "squeue", "--noheader", "--states=pending,running", "--format=%i"))
}

// squeueAll lists the IDs of every job Slurm still knows, ended ones too.
func (s *slurmSession) squeueAll(t testing.TB) []string {
	ids := strings.Fields(s.c.Run(t, "squeue", "--noheader", "--states=all", "--format=%i"))
	slices.Sort(ids)
	return ids
}
