package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// longWhy is why a job queued by labpool waits, as long as the one that
// made ps about 230 columns wide.
const longWhy = "waits on dgx-h100 for 4 GPUs: GPUs 0, 1, 2, 3: job train of bob; GPU 4: job eval of carol; " +
	"no other machine fits: ws-a100 has 1 of 4 GPUs free that match (busy: GPU 0: job sweep of alice; GPU 2: a process outside labpool)"

// TestPsStateShort: STATE is "queued" or a scheduler's short word; why a
// job waits goes on its own line, cut unless --wide, and one line whatever
// it holds.
func TestPsStateShort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		job   jobs.Job
		wide  bool
		state string // STATE holds it
		why   string // the line under it ("" for none)
	}{
		{name: "labpool's queue", job: jobs.Job{State: jobs.Queued, Error: longWhy}, state: "queued ",
			why: "  ↳ " + longWhy[:waitLineMax-1] + "…"},
		{name: "labpool's queue, wide", job: jobs.Job{State: jobs.Queued, Error: longWhy}, wide: true, state: "queued ", why: "  ↳ " + longWhy},
		{name: "slurm's word", job: jobs.Job{State: jobs.Queued, Executor: "slurm", Error: "queued by the cluster's scheduler: Resources"},
			state: "queued (Resources) "},
		{name: "slurm, no reason", job: jobs.Job{State: jobs.Queued, Executor: "slurm", Error: "queued by the cluster's scheduler"}, state: "queued "},
		{name: "slurm, long", job: jobs.Job{State: jobs.Queued, Executor: "slurm", Error: "queued by the cluster's scheduler: ReqNodeNotAvail, UnavailableNodes:gpu[01-08]"},
			state: "queued ", why: "  ↳ queued by the cluster's scheduler: ReqNodeNotAvail, UnavailableNodes:gpu[01-08]"},
		{name: "a newline forges no row", job: jobs.Job{State: jobs.Queued, Error: "waits\nq2  forged  row"}, state: "queued ", why: `  ↳ waits\x0aq2  forged  row`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.job.ID, tc.job.Name, tc.job.Image = "q1", "sweep", "pytorch:24"
			list := []app.Job{{Job: tc.job, NodeName: "dgx-h100", OwnerName: "ana"}}
			var out bytes.Buffer
			if err := writeJobs(&out, list, time.Now(), tc.wide); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			row := lines[1]
			if !strings.Contains(row, tc.state) || strings.Contains(row, "waits") || utf8.RuneCountInString(row) > 110 {
				t.Errorf("row %q (%d wide); want STATE %q, short", row, utf8.RuneCountInString(row), tc.state)
			}
			switch {
			case tc.why == "" && len(lines) != 2:
				t.Errorf("ps:\n%s\nwant no line under the job", out.String())
			case tc.why != "" && (len(lines) != 3 || lines[2] != tc.why):
				t.Errorf("ps:\n%s\nwant under the job:\n%s", out.String(), tc.why)
			}
		})
	}
}

// TestLaunchedSaysWhyOnce: a queued launch says why it waits once (the
// job's reason, not its placement too); a running one says where it was
// placed.
func TestLaunchedSaysWhyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  app.Job
		want string
	}{
		{name: "queued pool-wide", job: app.Job{Job: jobs.Job{ID: "q1", Name: "sweep", State: jobs.Queued, Error: longWhy},
			NodeName: "dgx-h100", Placement: "dgx-h100 has 0 free GPUs and is the least loaded that fits"},
			want: "sweep on dgx-h100: queued\n  ↳ " + longWhy + "\nq1\n"},
		{name: "queued on a machine named", job: app.Job{Job: jobs.Job{ID: "q1", Name: "sweep", State: jobs.Queued, Error: "waiting for GPUs: GPU 0: job train of mike"},
			NodeName: "big", Placement: "1 of 2 GPUs free that match (busy: GPU 0: job train of mike); the job will wait in the queue"},
			want: "sweep on big: queued\n  ↳ waiting for GPUs: GPU 0: job train of mike\nq1\n"},
		{name: "queued by slurm", job: app.Job{Job: jobs.Job{ID: "s1", Name: "sim", State: jobs.Queued, Executor: "slurm", Error: "queued by the cluster's scheduler: Priority"},
			NodeName: "hpc", Placement: "queues; 2 jobs pending in gpu may go first"},
			want: "sim on hpc: queued (Priority)\ns1\n"},
		{name: "running", job: app.Job{Job: jobs.Job{ID: "r1", Name: "train", State: jobs.Running, GPUIndexes: []int{0, 1}},
			NodeName: "big", Placement: "big has 2 free GPUs and is the least loaded that fits"},
			want: "train on big: running, GPUs [0 1]\nplaced: big has 2 free GPUs and is the least loaded that fits\nr1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeLaunched(&out, tc.job)
			if out.String() != tc.want {
				t.Errorf("run printed:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}
