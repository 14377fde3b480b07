package slurm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// BenchmarkSubmit compares Start through the executor with a bare sbatch
// of the same script and arguments, on the real test cluster. Both go
// through the same runner (nsenter into the cluster's namespace).
func BenchmarkSubmit(b *testing.B) {
	c := needSlurm(b)
	cfg := c.config(b)
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
	run := c.runner()
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

// squeue1000 is the poll's text for 1,000 jobs built from a JSON
// fixture's first job, half of them labpool's, with placeholders {R},
// {N}, {E} for the call's markers.
func squeue1000(b *testing.B, fixture string) string {
	_, list, err := ParseSqueue(readFixture(b, fixture))
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]Job, 1000)
	for i := range jobs {
		j := list[0]
		j.ID = strconv.Itoa(1000 + i)
		j.Comment = ""
		if i%2 == 0 {
			j.Comment = fmt.Sprintf("labpool:job=j%d,owner=DEV1", i)
		}
		jobs[i] = j
	}
	return string(renderText(jobs, textMarkers{Reason: "{R}", Name: "{N}", Comment: "{E}"}))
}

// textRunner answers the poll from a text template.
type textRunner struct{ text string }

func (r textRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	if name != "squeue" {
		return nil, nil
	}
	m := markersOf(args)
	return []byte(strings.NewReplacer("{R}", m.Reason, "{N}", m.Name, "{E}", m.Comment).Replace(r.text)), nil
}

// BenchmarkPoll1000 is one tick of the executor with 1,000 jobs in the
// queue: parse squeue's text, build every labpool job's status, diff
// with the last tick (the squeue process itself: BenchmarkPoll1000Real).
func BenchmarkPoll1000(b *testing.B) {
	for _, f := range []string{"squeue-22.05-running.json", "squeue-23.11-v0.0.40.json"} {
		b.Run(f, func(b *testing.B) {
			text := squeue1000(b, f)
			clock := &fakeClock{t: time.Unix(1795600200, 0)}
			user := "root"
			if f != "squeue-22.05-running.json" {
				user = "lab"
			}
			e, err := New(context.Background(), Config{StateDir: b.TempDir(), Runner: textRunner{text}, User: user, Containers: []string{}, Now: clock.now})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			// The first tick adopts the 500 labpool jobs (one record
			// file each), once; the loop measures the ticks after it.
			if _, err := e.List(ctx); err != nil {
				b.Fatal(err)
			}
			var last map[string]taskKey
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				clock.add(time.Second)
				snap, err := e.q.get(ctx, false)
				if err != nil {
					b.Fatal(err)
				}
				now := e.listFrom(ctx, snap)
				if len(now) != 500 {
					b.Fatalf("%d labpool jobs, want 500", len(now))
				}
				diff(last, now, clock.now())
				last = keys(now)
			}
		})
	}
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
// (root's: the agent runs as "nobody" here, as squeue --user=root seems
// to read every job). It reports the CPU of squeue itself (user+system of
// the child, from rusage) and of this process.
func BenchmarkPoll1000Real(b *testing.B) {
	c := needSlurm(b)
	for _, who := range []string{"labpool", "others"} {
		b.Run(who, func(b *testing.B) {
			cfg := c.config(b)
			var mu sync.Mutex
			var child time.Duration
			var runs int
			runner := c.runner()
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
			if _, err := e.List(ctx); err != nil { // adopt once, outside the loop
				b.Fatal(err)
			}
			var last map[string]taskKey
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
				now := e.listFrom(ctx, snap)
				diff(last, now, time.Now())
				last = keys(now)
			}
			goCPU := selfCPU() - self
			mu.Lock()
			if runs > 0 {
				b.ReportMetric(float64(child.Microseconds())/1000/float64(runs), "squeue-cpu-ms/op")
				b.ReportMetric(float64(goCPU.Microseconds())/1000/float64(ticks), "agent-cpu-ms/op")
			}
			mu.Unlock()
		})
	}
}

// selfCPU is this process's CPU time (user and system) so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
