//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm/slurmtest"
	"golang.org/x/sync/errgroup"
)

// BenchmarkSlurmAgentCost runs a cluster agent (agent --slurm) in front of
// a real Slurm cluster whose queue holds 1,000 jobs (held: they stay
// pending) and a laptop that follows it, and reports the CPU the agent
// used (percent of one core) over 20 s windows, the Slurm commands it runs
// included (their CPU counts as its children's; slurm-cmds-cpu-% is theirs
// alone), and its resident memory.
// LABPOOL_BENCH_SLURM_JOBS=N queues N jobs instead.
func BenchmarkSlurmAgentCost(b *testing.B) {
	queued := 1000
	if n, err := strconv.Atoi(os.Getenv("LABPOOL_BENCH_SLURM_JOBS")); err == nil && n >= 0 {
		queued = n
	}
	l := newLAN(b, "cluster", "laptop")
	cl, laptop := l.host("cluster"), l.host("laptop")
	c := slurmtest.Start(b, slurmtest.Options{Net: &slurmtest.Net{
		Switch: l.prefix + "sw", Bridge: "br0", Controller: cl.ns, ControllerAddr: cl.ip,
		NodeAddrs: []string{fmt.Sprintf("10.231.%d.101/24", l.subnet), fmt.Sprintf("10.231.%d.102/24", l.subnet)},
	}})
	holdJobs(b, c, queued)
	cl.env = append(cl.env, c.Env()...)
	cl.start("agent", "--name", "cluster", "--iface", "eth0", "--listen", ":7420", "--slurm", "--slurm-job-user", slurmtest.AddUser(b))
	laptop.agent()
	cl.waitDaemon()
	laptop.waitDaemon()
	joinAll(b, cl, laptop)
	waitFor(b, 20*time.Second, "the laptop follows the cluster", func() error { return liveNodes(laptop, "cluster") })
	pid := daemonPID(b, cl)
	time.Sleep(3 * time.Second) // past start-up
	const window = 20 * time.Second
	b.ResetTimer()
	pct := func(ticks int64) float64 { return 100 * float64(ticks) / 100 / window.Seconds() } // USER_HZ = 100
	var sum, busiest, cmds float64
	for range b.N {
		self0, all0 := cpuTicks(b, pid), cpuTicksAll(b, pid)
		time.Sleep(window)
		self1, all1 := cpuTicks(b, pid), cpuTicksAll(b, pid)
		sum, busiest = sum+pct(all1-all0), max(busiest, pct(all1-all0))
		cmds += pct((all1 - self1) - (all0 - self0))
	}
	b.StopTimer()
	b.ReportMetric(sum/float64(b.N), "cpu-%-of-core")
	b.ReportMetric(busiest, "cpu-%-max-window")
	b.ReportMetric(cmds/float64(b.N), "slurm-cmds-cpu-%")
	b.ReportMetric(float64(rssKB(b, pid))/1024, "rss-MB")
	b.ReportMetric(0, "ns/op")
}

// holdJobs queues n held jobs (pending until released: JobHeldUser), four
// sbatch at a time.
func holdJobs(b testing.TB, c *slurmtest.Cluster, n int) {
	b.Helper()
	var g errgroup.Group
	g.SetLimit(4)
	for i := range n {
		g.Go(func() error {
			out, err := c.Command(context.Background(), "sbatch", "--hold", "--quiet", "--output=/dev/null",
				"--job-name", fmt.Sprintf("queued%04d", i), "--wrap", "true").CombinedOutput()
			if err != nil {
				return fmt.Errorf("sbatch: %v: %s", err, out)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	if got := len(strings.Fields(c.Run(b, "squeue", "--noheader", "--format=%i"))); got != n {
		b.Fatalf("squeue lists %d jobs, want %d", got, n)
	}
}

// cpuTicksAll is the CPU time of pid and of its children that ended
// (utime+stime+cutime+cstime) in clock ticks: an agent's Slurm commands
// count.
func cpuTicksAll(b testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	var sum int64
	for _, i := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		sum += v
	}
	return sum
}

// BenchmarkSlurmStateVisible measures how long a change of a Slurm job's
// state takes to show on a laptop of the pool, after squeue shows it: per
// iteration a job is launched from the laptop, runs 1 s and ends; squeue
// (in the cluster's namespace) and the laptop's API are polled every 20 ms.
// It reports the medians and maxima of the delays of the start and of the
// end (ns/op is unused).
func BenchmarkSlurmStateVisible(b *testing.B) {
	l := newLAN(b, "cluster", "laptop")
	cl, laptop := l.host("cluster"), l.host("laptop")
	c := slurmtest.Start(b, slurmtest.Options{Net: &slurmtest.Net{
		Switch: l.prefix + "sw", Bridge: "br0", Controller: cl.ns, ControllerAddr: cl.ip,
		NodeAddrs: []string{fmt.Sprintf("10.231.%d.101/24", l.subnet), fmt.Sprintf("10.231.%d.102/24", l.subnet)},
	}})
	cl.env = append(cl.env, c.Env()...)
	cl.start("agent", "--name", "cluster", "--iface", "eth0", "--listen", ":7420", "--slurm", "--slurm-job-user", slurmtest.AddUser(b))
	laptop.agent()
	cl.waitDaemon()
	laptop.waitDaemon()
	joinAll(b, cl, laptop)
	waitFor(b, 20*time.Second, "the laptop follows the cluster", func() error { return liveNodes(laptop, "cluster") })
	s := &slurmSession{c: c, laptop: laptop}
	var starts, ends []time.Duration
	b.ResetTimer()
	for range b.N {
		id := s.launch(b, jobs.Spec{GPUs: 1, Cmd: []string{"sleep", "1"}})
		handle := s.handle(b, id)
		var slurmRun, slurmEnd, poolRun, poolEnd time.Time
		deadline := time.Now().Add(30 * time.Second)
		for (poolRun.IsZero() || poolEnd.IsZero() || slurmEnd.IsZero()) && time.Now().Before(deadline) {
			now := time.Now()
			switch st := s.squeueState(b, handle); {
			case st == "RUNNING" && slurmRun.IsZero():
				slurmRun = now
			case st == "COMPLETED" && slurmEnd.IsZero():
				slurmEnd = now
				if slurmRun.IsZero() { // it ran between two polls
					slurmRun = now
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			j, err := laptop.client().Job(ctx, id)
			cancel()
			switch {
			case err != nil:
			case j.State == "running" && poolRun.IsZero():
				poolRun = time.Now()
			case j.State == "exited" && poolEnd.IsZero():
				poolEnd = time.Now()
				if poolRun.IsZero() {
					poolRun = poolEnd
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		if poolEnd.IsZero() || slurmEnd.IsZero() {
			b.Fatalf("job %s (slurm %s): not seen ending within 30 s", id, handle)
		}
		starts = append(starts, max(0, poolRun.Sub(slurmRun)))
		ends = append(ends, max(0, poolEnd.Sub(slurmEnd)))
	}
	b.StopTimer()
	b.ReportMetric(ms(median(starts)), "start-median-ms")
	b.ReportMetric(ms(slices.Max(starts)), "start-max-ms")
	b.ReportMetric(ms(median(ends)), "end-median-ms")
	b.ReportMetric(ms(slices.Max(ends)), "end-max-ms")
	b.ReportMetric(0, "ns/op")
}
