//go:build linux

package slurm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// BenchmarkSubmit compares Start through the executor (as the job
// account: setpriv, the script on sbatch's stdin, the record saved) with
// a bare sbatch by the agent's own user of the same script and
// arguments, its environment set, on the real test cluster. Both go
// through the same runner (nsenter into the cluster's namespace).
func BenchmarkSubmit(b *testing.B) {
	c := needSlurm(b)
	cfg := realConfig(b, c)
	e, err := New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	task := jobs.Task{ID: "bench", Owner: "DEV1", Cmd: []string{"true"}}
	var handles []string
	defer func() {
		if len(handles) > 0 {
			_, _ = e.run.Run(context.Background(), "scancel", handles...)
		}
	}()
	b.Run("executor", func(b *testing.B) {
		for b.Loop() {
			st, err := e.Start(context.Background(), task)
			if err != nil {
				b.Fatal(err)
			}
			handles = append(handles, st.Handle)
		}
	})
	bt, err := buildBatch(task, batchPlan{Comment: "labpool:job=bench,owner=DEV1",
		Output: filepath.Join(cfg.StateDir, "slurm-%j.out"), Dir: cfg.StateDir})
	if err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(cfg.StateDir, "bare.sh")
	if err := os.WriteFile(script, []byte(bt.Script), 0o700); err != nil {
		b.Fatal(err)
	}
	for _, kv := range bt.Env {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	run := realRunner(c)
	b.Run("sbatch", func(b *testing.B) {
		for b.Loop() {
			out, err := run.Run(context.Background(), "sbatch", append(bt.Args, script)...)
			if err != nil {
				b.Fatal(err)
			}
			handles = append(handles, string(out[:len(out)-1]))
		}
	})
}

// jobs1000 is 1,000 jobs built from a JSON fixture's first job, half of
// them labpool's (the even ones).
func jobs1000(b testing.TB, fixture string) []Job {
	_, list, err := ParseSqueue(readFixture(b, fixture))
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]Job, 1000)
	for i := range jobs {
		j := list[0]
		j.ID = strconv.Itoa(1000 + i)
		j.Comment = ""
		j.LabpoolJob, j.Owner = "", ""
		if i%2 == 0 {
			j.Comment = fmt.Sprintf("labpool:job=j%d,owner=DEV1", i)
			j.LabpoolJob, j.Owner = ParseComment(j.Comment)
		}
		jobs[i] = j
	}
	return jobs
}

// textRunner answers the poll's squeue for jobs as the real one prints
// them. With flip, each state-line read sees one labpool job in the
// other of two states than the read before (a queue where one job
// changes state every tick).
type textRunner struct {
	jobs  [2][]Job
	state [2]template // the state lines of jobs[0] and jobs[1]
	full  template    // the full records of jobs[0]
	flip  bool
	cur   int // which of jobs the last state-line read showed
}

func newTextRunner(jobs []Job, flip bool) *textRunner {
	r := &textRunner{flip: flip}
	r.jobs[0] = jobs
	r.jobs[1] = slices.Clone(jobs)
	last := &r.jobs[1][len(jobs)-2]
	last.State, last.Reason = "RUNNING", ""
	if jobs[len(jobs)-2].State == "RUNNING" {
		last.State, last.Reason = "PENDING", "Priority"
	}
	ph := textMarkers{Reason: "{R}", Name: "{N}", Comment: "{E}"}
	for i := range r.jobs {
		r.state[i] = newTemplate(string(renderStateText(r.jobs[i], ph)))
	}
	r.full = newTemplate(string(renderText(jobs, ph)))
	return r
}

func (r *textRunner) RunAs(ctx context.Context, _ As, name string, args ...string) ([]byte, error) {
	return r.Run(ctx, name, args...)
}

func (r *textRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	if name != "squeue" {
		return nil, nil
	}
	m := markersOf(args)
	switch {
	case stateLines(args):
		if r.flip {
			r.cur = 1 - r.cur
		}
		return r.state[r.cur].fill(m), nil
	case r.cur == 0 && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--jobs=") }):
		return r.full.fill(m), nil
	}
	return renderFor(r.jobs[r.cur], args, m), nil
}

// template is squeue's output with placeholders {R}, {N}, {E} for the
// call's markers, split at them.
type template struct {
	parts []string
	marks []byte // after parts[i]: 'R', 'N' or 'E'; 0 after the last
	size  int
}

func newTemplate(text string) template {
	var t template
	for {
		i := strings.IndexByte(text, '{')
		if i < 0 || i+2 >= len(text) || text[i+2] != '}' {
			t.parts, t.marks = append(t.parts, text), append(t.marks, 0)
			break
		}
		t.parts, t.marks = append(t.parts, text[:i]), append(t.marks, text[i+1])
		text = text[i+3:]
	}
	t.size = len(strings.Join(t.parts, "")) + 20*len(t.parts)
	return t
}

func (t template) fill(m textMarkers) []byte {
	out := make([]byte, 0, t.size)
	for i, p := range t.parts {
		out = append(out, p...)
		switch t.marks[i] {
		case 'R':
			out = append(out, m.Reason...)
		case 'N':
			out = append(out, m.Name...)
		case 'E':
			out = append(out, m.Comment...)
		}
	}
	return out
}

// BenchmarkPoll1000 is one tick of the executor's event loop with 1,000
// jobs in the queue, 500 of them labpool's: read squeue's state lines,
// reuse what did not change, list and diff labpool's jobs when something
// did (the squeue process itself: BenchmarkPoll1000Real). "changing": one
// job changes state every tick (a second squeue reads it in full).
func BenchmarkPoll1000(b *testing.B) {
	for _, f := range []string{"squeue-22.05-running.json", "squeue-23.11-v0.0.40.json"} {
		for _, flip := range []bool{false, true} {
			name := f
			if flip {
				name += "/changing"
			}
			b.Run(name, func(b *testing.B) {
				benchPoll(b, f, flip)
			})
		}
	}
}

func benchPoll(b *testing.B, fixture string, flip bool) {
	jobs := jobs1000(b, fixture)
	r := newTextRunner(jobs, flip)
	clock := &fakeClock{t: time.Unix(1795600200, 0)}
	e, err := New(context.Background(), fakeConfig(privateDir(b), r, clock))
	if err != nil {
		b.Fatal(err)
	}
	recordJobs(b, e, jobs, jobs[0].User)
	ctx := context.Background()
	// The first tick adopts the 500 labpool jobs (one record file
	// each), once; the loop measures the ticks after it.
	var w watch
	snap, err := e.q.get(ctx, false)
	if err != nil {
		b.Fatal(err)
	}
	e.step(ctx, &w, snap)
	var events int
	b.ReportAllocs()
	for b.Loop() {
		clock.add(time.Second)
		snap, err := e.q.get(ctx, false)
		if err != nil {
			b.Fatal(err)
		}
		events += len(e.step(ctx, &w, snap))
		if len(w.last) != 500 {
			b.Fatalf("%d labpool jobs, want 500", len(w.last))
		}
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// BenchmarkPoll1000JSON is the same tick read from `squeue --json` (the
// fallback for a squeue that refuses the text format), for comparison.
func BenchmarkPoll1000JSON(b *testing.B) {
	_, list, err := ParseSqueue(readFixture(b, "squeue-23.11-v0.0.40.json"))
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	_ = json.Unmarshal(readFixture(b, "squeue-23.11-v0.0.40.json"), &doc)
	first := doc["jobs"].([]any)[0]
	many := make([]any, 1000)
	for i := range many {
		many[i] = first
	}
	doc["jobs"] = many
	data, _ := json.Marshal(doc)
	_ = list
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := ParseSqueue(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPoll1000Real is one tick against the real test cluster with
// 1,000 held jobs in the queue: "labpool" where they are all the agent's
// (labpool's, the worst case), "others" where they are another user's
// (root's: the agent runs as "nobody" here, as squeue --user=root reads
// every job: 22.05's squeue takes uid 0 for no user). It reports the CPU of squeue itself (user+system of
// the child, from rusage, with the test's nsenter: wrap-cpu-ms is that
// wrapper running true) and of this process, per tick.
func BenchmarkPoll1000Real(b *testing.B) {
	c := needSlurm(b)
	for _, who := range []string{"labpool", "others"} {
		b.Run(who, func(b *testing.B) {
			cfg := realConfig(b, c)
			var mu sync.Mutex
			var child time.Duration
			var runs int
			runner := realRunner(c)
			runner.Usage = func(name string, user, sys time.Duration) {
				if name == "squeue" {
					mu.Lock()
					child += user + sys
					runs++
					mu.Unlock()
				}
			}
			cfg.Runner = runner
			if who == "others" {
				cfg.User = "nobody"
			}
			e, err := New(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			defer func() {
				_, _ = e.run.Run(ctx, "scancel", "--user=root")
			}()
			submit := func(i int) {
				if who == "others" {
					if _, err := e.run.Run(ctx, "sbatch", "--hold", "--output=/dev/null", "--wrap=true"); err != nil {
						b.Fatal(err)
					}
					return
				}
				st, err := e.Start(ctx, jobs.Task{ID: fmt.Sprintf("held%d", i), Owner: "DEV1", Cmd: []string{"true"}, Resources: jobs.Resources{GPUs: 1}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.run.Run(ctx, "scontrol", "hold", st.Handle); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 1000 {
				submit(i)
			}
			// The first tick adopts, once, outside the loop.
			var w watch
			snap, err := e.q.get(ctx, false)
			if err != nil {
				b.Fatal(err)
			}
			e.step(ctx, &w, snap)
			mu.Lock()
			child, runs = 0, 0
			mu.Unlock()
			self := selfCPU()
			ticks := 0
			for b.Loop() {
				ticks++
				e.q.invalidate()
				snap, err := e.q.get(ctx, false)
				if err != nil {
					b.Fatal(err)
				}
				if who == "labpool" && len(snap.Jobs) < 1000 {
					b.Fatalf("%d jobs in the queue", len(snap.Jobs))
				}
				e.step(ctx, &w, snap)
			}
			goCPU := selfCPU() - self
			mu.Lock()
			if runs > 0 {
				b.ReportMetric(float64(child.Microseconds())/1000/float64(runs), "squeue-cpu-ms/op")
				b.ReportMetric(float64(goCPU.Microseconds())/1000/float64(ticks), "agent-cpu-ms/op")
				b.ReportMetric(float64(runs)/float64(ticks), "squeues/op")
			}
			mu.Unlock()
			// The test's wrapper (nsenter into the cluster's namespace)
			// is in squeue-cpu-ms; an agent on a submit host runs none.
			var wrap time.Duration
			runner.Usage = func(_ string, user, sys time.Duration) { wrap += user + sys }
			for range 20 {
				if _, err := runner.Run(ctx, "true"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(wrap.Microseconds())/1000/20, "wrap-cpu-ms/op")
		})
	}
}

// selfCPU is this process's CPU time (user and system) so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
