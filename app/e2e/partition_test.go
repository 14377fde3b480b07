//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers"
)

// TestPartition splits a pool of six machines 3 | 3 for 60 s, launches jobs
// on both sides during the split (run --node on each side's GPU machine,
// and a queued job on each that starts while the split lasts, and one
// launch across the split, which must fail), heals it, and checks that
// every machine's replica agrees on nodes, membership and jobs within 2 s
// of the heal and that no job runs twice: each engine holds one container
// per job, and the launch that failed runs nowhere.
func TestPartition(t *testing.T) {
	l := newLAN(t, "a1", "a2", "a3", "b1", "b2", "b3")
	a, b := l.hosts[:3], l.hosts[3:]
	engines := map[*host]string{}
	for _, h := range []*host{a[0], b[0]} { // one GPU machine with an engine on each side
		h.env = append(h.env, "LABPOOL_SIMULATE_GPUS=1")
		engines[h] = h.docker()
	}
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, l.hosts...)
	waitFor(t, 60*time.Second, "every machine sees the six online and agrees", func() error {
		_, err := converged(l.hosts, nil)
		return err
	})
	const img = "labpool-test/busybox:1"
	run := func(from *host, args ...string) string {
		t.Helper()
		out := mustCLI(t, from, append([]string{"run"}, args...)...)
		return lastLine(out)
	}
	// Each side's GPU is held before the split, so the queued jobs below
	// queue.
	holdA := run(a[1], "--node", "a1", "--gpus", "1", "--name", "hold-a", img, "sleep", "600")
	holdB := run(b[1], "--node", "b1", "--gpus", "1", "--name", "hold-b", img, "sleep", "600")
	waitFor(t, 30*time.Second, "both holders running everywhere", func() error {
		_, err := converged(l.hosts, map[string]string{holdA: "running", holdB: "running"})
		return err
	})

	start := time.Now()
	split(t, a, b, "add")
	healed := false
	defer func() {
		if !healed {
			split(t, a, b, "del")
		}
	}()
	waitFor(t, 30*time.Second, "each side to see the other offline", func() error {
		for _, side := range [][]*host{a, b} {
			other := b
			if side[0] == b[0] {
				other = a
			}
			for _, h := range side {
				for _, o := range other {
					if n, err := nodeByName(h, o.name); err != nil || n.Online {
						return fmt.Errorf("%s sees %s online (%v)", h.name, o.name, err)
					}
				}
			}
		}
		return nil
	})
	queuedA := run(a[2], "--node", "a1", "--gpus", "1", "--queue", "--name", "queued-a", img, "sleep", "600")
	queuedB := run(b[2], "--node", "b1", "--gpus", "1", "--queue", "--name", "queued-b", img, "sleep", "600")
	runA := run(a[2], "--node", "a1", "--name", "split-a", img, "sleep", "600")
	runB := run(b[2], "--node", "b1", "--name", "split-b", img, "sleep", "600")
	// A launch across the split fails with a clear error and leaves nothing
	// to run later.
	if out, errOut, code := a[1].cli("run", "--node", "b1", "--name", "across", img, "sleep", "600"); code == 0 {
		t.Errorf("a launch on b1 from a2 across the split succeeded: %s", out)
	} else if !strings.Contains(errOut, "b1") {
		t.Errorf("a launch across the split: exit %d, %q; want an error naming b1", code, errOut)
	}
	// Each side frees its GPU: its queued job starts during the split.
	mustCLI(t, a[0], "stop", holdA)
	mustCLI(t, b[0], "stop", holdB)
	for _, side := range []struct {
		h  *host
		id string
	}{{a[0], queuedA}, {b[0], queuedB}} {
		waitFor(t, 30*time.Second, "the queued job running on "+side.h.name, func() error {
			j, err := side.h.client().Job(context.Background(), side.id)
			if err != nil || j.State != "running" {
				return fmt.Errorf("%s: %s %v", side.id, j.State, err)
			}
			return nil
		})
	}
	if d := time.Until(start.Add(partitionFor())); d > 0 {
		time.Sleep(d) // the split lasts its full length
	}
	want := map[string]string{holdA: "exited", holdB: "exited", queuedA: "running", queuedB: "running",
		runA: "running", runB: "running"}
	took := heal(t, a, b, want)
	healed = true
	t.Logf("converged %v after healing a %v split", took.Round(time.Millisecond), time.Since(start).Round(time.Second))
	if took > 2*time.Second {
		t.Errorf("the six replicas agreed %v after the heal; want within 2s", took)
	}
	// No job ran twice, and the launch across the split ran nowhere.
	for h, sock := range engines {
		counts := containersByJob(t, h, sock)
		for id, n := range counts {
			if n != 1 {
				t.Errorf("%s's engine holds %d containers of job %s", h.name, n, id)
			}
		}
		var mine []string
		for id := range want {
			if j, err := h.client().Job(context.Background(), id); err == nil && j.NodeName == h.name {
				mine = append(mine, id)
			}
		}
		if len(counts) != len(mine) {
			t.Errorf("%s's engine holds containers of %d jobs, want its %d: %v", h.name, len(counts), len(mine), counts)
		}
	}
	jobs, err := a[0].client().Jobs(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Name == "across" {
			t.Errorf("the launch refused across the split is listed: %s on %s, %s", j.ID, j.NodeName, j.State)
		}
	}
}

// partitionFor is how long TestPartition's split lasts: 60 s, or
// LABPOOL_PARTITION (a Go duration) when set.
func partitionFor() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LABPOOL_PARTITION")); err == nil {
		return d
	}
	return 60 * time.Second
}

// heal joins a and b again and returns how long after it began every
// machine's replica agreed, with the jobs of want in their states.
func heal(t testing.TB, a, b []*host, want map[string]string) time.Duration {
	t.Helper()
	all := append(slices.Clone(a), b...)
	healed := time.Now() // the heal takes as long as moving the ports back, counted in
	split(t, a, b, "del")
	var took time.Duration
	waitFor(t, 30*time.Second, "the replicas to agree after the heal", func() error {
		at, err := converged(all, want)
		took = at.Sub(healed)
		return err
	})
	return took
}

// converged reads every host's view (nodes and whether each is online,
// members and their roles, jobs and their states) and checks that all
// are online and the views are equal, with each job of want in its state.
// It returns the time the first view was read: the views agreed then.
func converged(hosts []*host, want map[string]string) (time.Time, error) {
	at := time.Now()
	var first string
	for i, h := range hosts {
		v, err := view(h, len(hosts))
		if err != nil {
			return at, err
		}
		if i == 0 {
			first = v
			if err := hasJobs(v, want); err != nil {
				return at, fmt.Errorf("%s: %w", h.name, err)
			}
		} else if v != first {
			return at, fmt.Errorf("%s's view differs from %s's:\n%s\n---\n%s", h.name, hosts[0].name, v, first)
		}
	}
	return at, nil
}

// view is h's replica as text: nodes, members, jobs, sorted.
func view(h *host, machines int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c := h.client()
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return "", err
	}
	st, err := c.Pool(ctx)
	if err != nil {
		return "", err
	}
	jobs, err := c.Jobs(ctx, true)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, n := range nodes {
		if !n.Online {
			return "", fmt.Errorf("%s sees %s offline", h.name, n.Name)
		}
		lines = append(lines, "node "+n.Name)
	}
	if len(nodes) != machines {
		return "", fmt.Errorf("%s lists %d nodes, want %d", h.name, len(nodes), machines)
	}
	for _, m := range st.Members {
		lines = append(lines, fmt.Sprintf("member %s %s removed=%v", m.ID, m.Role, m.Removed))
	}
	for _, j := range jobs {
		lines = append(lines, fmt.Sprintf("job %s %s on %s %s stale=%v", j.ID, j.Name, j.NodeName, j.State, j.Stale))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

// hasJobs checks that the view v lists each job of want in its state.
func hasJobs(v string, want map[string]string) error {
	for id, state := range want {
		found := false
		for _, line := range strings.Split(v, "\n") {
			f := strings.Fields(line)
			if len(f) >= 6 && f[0] == "job" && f[1] == id {
				found = true
				if f[5] != state {
					return fmt.Errorf("job %s (%s) is %s, want %s", id, f[2], f[5], state)
				}
			}
		}
		if !found {
			return fmt.Errorf("job %s not listed", id)
		}
	}
	return nil
}

// containersByJob counts the labpool containers of h's engine (at sock),
// running or not, by job ID.
func containersByJob(t testing.TB, h *host, sock string) map[string]int {
	t.Helper()
	out, err := exec.Command("docker", "-H", sock, "ps", "-a", "--filter", "label="+containers.LabelManaged+"=true",
		"--format", `{{.Label "`+containers.LabelJob+`"}}`).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps on %s: %v: %s", h.name, err, out)
	}
	counts := map[string]int{}
	for _, id := range strings.Fields(string(out)) {
		counts[id]++
	}
	return counts
}

// BenchmarkPartitionHeal splits six machines 3 | 3 for LABPOOL_PARTITION
// (10 s unless set), with a change of membership on each side during the
// split (the owner on one side and an admin on the other each change a
// member's role), and measures how long after each heal every replica
// agrees: its median and worst over b.N heals.
func BenchmarkPartitionHeal(b *testing.B) {
	l := newLAN(b, "a1", "a2", "a3", "b1", "b2", "b3")
	a, z := l.hosts[:3], l.hosts[3:]
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(b, l.hosts...)
	setRole(b, a[0], z[0], "admin") // the owner is a1; b1 changes roles on its side
	waitFor(b, 60*time.Second, "every machine sees the six online and agrees", func() error {
		_, err := converged(l.hosts, nil)
		return err
	})
	hold := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("LABPOOL_PARTITION")); err == nil {
		hold = d
	}
	var heals []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		start := time.Now()
		split(b, a, z, "add")
		roleA, roleB := "admin", "viewer"
		if i%2 == 1 {
			roleA, roleB = "member", "member"
		}
		setRole(b, a[0], a[1], roleA)
		setRole(b, z[0], z[1], roleB)
		time.Sleep(time.Until(start.Add(hold)))
		heals = append(heals, heal(b, a, z, nil))
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(median(heals)), "heal-median-ms")
	b.ReportMetric(ms(slices.Max(heals)), "heal-max-ms")
	b.Logf("heals: %v", heals)
}

// setRole makes by give target's device role.
func setRole(t testing.TB, by, target *host, role string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := target.client().Pool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := by.client().SetRole(ctx, st.SelfID, role); err != nil {
		t.Fatalf("%s sets %s's role to %s: %v", by.name, target.name, role, err)
	}
}
