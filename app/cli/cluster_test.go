package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
	"github.com/spf13/pflag"
)

// runSpec parses run's flags and args as the verb does.
func runSpec(t *testing.T, args ...string) (jobs.Spec, error) {
	t.Helper()
	var f runFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetInterspersed(false)
	f.add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return f.spec(fs.Args(), fs.ArgsLenAtDash())
}

func TestRunClusterFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want jobs.Spec
		err  string
	}{
		{"command job", []string{"--node", "hpc", "--partition", "gpu", "--gpus", "2", "--cpus", "4", "--memory", "16g", "--time", "2h", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"},
			jobs.Spec{Cmd: []string{"sh", "-c", "echo $CUDA_VISIBLE_DEVICES"}, Partition: "gpu", GPUs: 2, CPUs: 4, MemoryBytes: 16 << 30, TimeLimitSeconds: 7200}, ""},
		{"image job", []string{"--gpus", "1", "--time", "1-12:00:00", "pytorch:24", "python", "train.py"},
			jobs.Spec{Image: "pytorch:24", Cmd: []string{"python", "train.py"}, GPUs: 1, TimeLimitSeconds: 36 * 3600}, ""},
		{"multi-node", []string{"--nodes", "2", "--gpus-per-node", "4", "--time", "30:00", "--", "srun", "hostname"},
			jobs.Spec{Cmd: []string{"srun", "hostname"}, Nodes: 2, GPUsPerNode: 4, TimeLimitSeconds: 1800}, ""},
		{"gpus per node on one node", []string{"--nodes", "1", "--gpus-per-node", "2", "--", "x"},
			jobs.Spec{Cmd: []string{"x"}, GPUs: 2}, ""},
		{"90m", []string{"--time", "90m", "img"}, jobs.Spec{Image: "img", Cmd: []string{}, TimeLimitSeconds: 5400}, ""},
		{"--gpus with several nodes", []string{"--nodes", "2", "--gpus", "4", "--", "x"}, jobs.Spec{},
			"--gpus counts the GPUs of a job on one node: with --nodes 2, use --gpus-per-node"},
		{"--gpus and --gpus-per-node", []string{"--gpus", "4", "--gpus-per-node", "2", "--", "x"}, jobs.Spec{}, "give --gpus or --gpus-per-node, not both"},
		{"bad time", []string{"--time", "soon", "--", "x"}, jobs.Spec{}, `--time: time limit "soon"`},
		{"negative nodes", []string{"--nodes", "-1", "--", "x"}, jobs.Spec{}, "--nodes and --gpus-per-node count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runSpec(t, tt.args...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("spec: %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunRefusesGPUsWithNodes(t *testing.T) {
	code, _, stderr := run(t, Hooks{}, "--data", t.TempDir(), "run", "--node", "hpc", "--nodes", "2", "--gpus", "2", "--", "hostname")
	if code != ExitUsage || !strings.Contains(stderr, "use --gpus-per-node") {
		t.Errorf("exit %d, stderr %q; want a usage error naming --gpus-per-node", code, stderr)
	}
}

func TestJobState(t *testing.T) {
	code := func(n int) *int { return &n }
	tests := []struct {
		j    jobs.Job
		want string
	}{
		{jobs.Job{State: jobs.Queued, Executor: "slurm", Error: "Resources"}, "queued (Resources)"},
		{jobs.Job{State: jobs.Queued, Error: "waits on dgx-h100 for 2 GPUs: GPUs 0, 1: job a of bob; no other machine fits: ws-a100 has 1 of 4 GPUs free"}, "queued"},
		{jobs.Job{State: jobs.Queued}, "queued"},
		{jobs.Job{State: jobs.Running}, "running"},
		{jobs.Job{State: jobs.Exited, ExitCode: code(0)}, "exited 0"},
		{jobs.Job{State: jobs.Failed, ExitCode: code(3)}, "exited 3"},
		{jobs.Job{State: jobs.Exited, Outcome: "cancelled", ExitCode: code(0)}, "cancelled"},
		{jobs.Job{State: jobs.Failed, Outcome: "timed_out", ExitCode: code(0)}, "timed out"},
		{jobs.Job{State: jobs.Failed, Outcome: "oom"}, "killed: out of memory"},
		{jobs.Job{State: jobs.Failed, Error: "no such image"}, "failed: no such image"},
		// --restart on-failure: the engine's restarts show.
		{jobs.Job{State: jobs.Running, Restarts: 2}, "running, restarted 2×"},
		{jobs.Job{State: jobs.Failed, ExitCode: code(1), Restarts: 5}, "exited 1, restarted 5×"},
	}
	for _, tt := range tests {
		if got := jobState(tt.j); got != tt.want {
			t.Errorf("jobState(%+v) = %q; want %q", tt.j, got, tt.want)
		}
	}
}

func TestWriteJobsCluster(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	started := now.Add(-time.Hour)
	list := []app.Job{
		{Job: jobs.Job{ID: "a1", Name: "ddp", Executor: "slurm", State: jobs.Running, Hosts: []string{"gpu01", "gpu02"},
			Spec: jobs.Spec{Nodes: 2, GPUsPerNode: 4}, Started: &started}, NodeName: "hpc", OwnerName: "mike"},
		{Job: jobs.Job{ID: "a2", Name: "big", Executor: "slurm", State: jobs.Queued, Error: "Resources", Spec: jobs.Spec{GPUs: 8}, Image: "pytorch:24"},
			NodeName: "hpc", OwnerName: "ana"},
	}
	var out bytes.Buffer
	if err := writeJobs(&out, list, now, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HOSTS", "hpc (slurm)  running", "2x4", "gpu01,gpu02", "(command)", "queued (Resources)", "pytorch:24"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ps:\n%s\nlacks %q", out.String(), want)
		}
	}
}

// TestNodesCluster: nodes and gpus show a cluster machine's card, and
// nodes --json carries all of it.
func TestNodesCluster(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	db := writeReplicaAt(t, dir, now)
	// paula launched job 4101 through the cluster's agent: its record
	// carries her proof, so the queue names her.
	paula := apptest.NewLauncher(7)
	if _, err := db.PutMember(context.Background(), store.MemberRow{ID: paula.ID, Name: "paula", Version: 1, AddedAt: now, AddedBy: selfID}); err != nil {
		t.Fatal(err)
	}
	j := paula.Proven(t, apptest.ClusterID, jobs.Job{Name: "bert-large", State: jobs.Running, Executor: "slurm", Spec: jobs.Spec{Cmd: []string{"train"}}})
	apptest.WriteCluster(t, db, now, "hpc", apptest.Cluster(now, j.ID, paula.ID), j)

	code, stdout, stderr := run(t, Hooks{}, "--data", dir, "nodes")
	if code != ExitOK {
		t.Fatalf("nodes: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"16 (5 free, Slurm: 3 nodes)", // the machines' table
		"hpc: Slurm cluster hpc (Slurm 23.11.4)", "images through pyxis",
		"GPUs: a100 3/8 alloc, h100 0/8 alloc",
		"gpu*", "2-00:00:00", "gpu03", "drained (bad DIMM)", "12/32",
		"queue: 2 running, 2 pending", "PENDING (Resources)", "PENDING (Priority)",
		"paula (labpool)", // the member's name, not the shared Unix user
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("nodes:\n%s\nlacks %q", stdout, want)
		}
	}

	code, stdout, _ = run(t, Hooks{}, "--data", dir, "gpus")
	if code != ExitOK || !strings.Contains(stdout, "hpc (Slurm cluster hpc): a100 3/8 alloc, h100 0/8 alloc") || !strings.Contains(stdout, "gpu01") {
		t.Errorf("gpus (exit %d):\n%s\nlacks the cluster's GPUs", code, stdout)
	}
	code, stdout, _ = run(t, Hooks{}, "--data", dir, "gpus", "--json")
	if gs := decodeObjects(t, stdout); code != ExitOK || len(gs) != 2 {
		t.Errorf("gpus --json (exit %d): %d GPUs; want the machines' 2", code, len(gs))
	}

	code, stdout, _ = run(t, Hooks{}, "--data", dir, "nodes", "--json")
	var hpc map[string]any
	for _, n := range decodeObjects(t, stdout) {
		if n["id"] == apptest.ClusterID {
			hpc = n
		}
	}
	if code != ExitOK || hpc == nil {
		t.Fatalf("nodes --json (exit %d) lacks the cluster:\n%s", code, stdout)
	}
	c, _ := hpc["cluster"].(map[string]any)
	if m := missingKeys(c, "name", "version", "partitions", "nodes", "gpus", "queue", "running", "pending", "containers", "read"); m != nil {
		t.Errorf("cluster lacks %v: %v", m, c)
	}
	if owners, _ := hpc["cluster_owners"].(map[string]any); owners[paula.ID] != "paula" {
		t.Errorf("cluster_owners = %v; want %s: paula", hpc["cluster_owners"], paula.ID)
	}
}

func TestWritePlanCluster(t *testing.T) {
	p := app.Plan{NodePlan: app.NodePlan{Node: apptest.ClusterID, NodeName: "hpc", Fits: true, Reason: "can start now: 2 GPUs and 1 CPU free on gpu02",
		Cluster: &slurm.SubmitPlan{Partition: "gpu", Command: "sbatch --partition=gpu --nodes=1 --gres=gpu:2", Fits: true, StartsNow: true, Nodes: []string{"gpu02"}}}}
	var out bytes.Buffer
	writePlan(&out, p)
	want := "would run on hpc: can start now: 2 GPUs and 1 CPU free on gpu02\n  sbatch --partition=gpu --nodes=1 --gres=gpu:2\n  starts now on gpu02\n"
	if out.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", out.String(), want)
	}
}

// liveSet is a Liveness where the machines named are online.
type liveSet map[string]bool

func (l liveSet) Online(id string) bool { return l[id] }

// TestRunDryRunCluster: run --dry-run on a cluster asks the daemon's plan
// and prints what sbatch will be given and whether it starts now; --json
// prints the plan whole.
func TestRunDryRunCluster(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	db := writeReplicaAt(t, dir, now)
	apptest.WriteCluster(t, db, now, "hpc", apptest.Cluster(now, "", ""))
	svc := apptest.NewService(db, app.Self{ID: selfID, Name: "self"}, liveSet{apptest.ClusterID: true}, nil)
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, web.Handler(svc, nil, slog.New(slog.DiscardHandler)))

	code, stdout, stderr := run(t, Hooks{}, "--data", dir, "run", "--node", "hpc", "--gpus", "2", "--time", "2h", "--dry-run", "--", "python", "train.py")
	want := "would run on hpc: can start now: 2 GPUs and 1 CPU free on gpu02 (2 jobs pending in gpu may go first)\n" +
		"  sbatch --nodes=1 --gres=gpu:2 --time=120\n  starts now on gpu02\n"
	if code != ExitOK || !strings.HasPrefix(stdout, want) {
		t.Errorf("exit %d, stdout:\n%s\nstderr %q; want it to start with:\n%s", code, stdout, stderr, want)
	}
	// A plan that does not fit is printed, and the dry-run exits 1.
	code, stdout, stderr = run(t, Hooks{}, "--data", dir, "run", "--node", "hpc", "--nodes", "2", "--gpus-per-node", "8", "--dry-run", "--", "x")
	if code != ExitFailure || !strings.Contains(stdout, "does not fit on hpc: only 1 node of partition gpu has 8 GPUs and 1 CPU; 2 asked") ||
		!strings.Contains(stderr, "it does not fit now") {
		t.Errorf("exit %d, stdout:\n%s\nstderr %q; want the partition never fits, exit 1", code, stdout, stderr)
	}
	code, stdout, _ = run(t, Hooks{}, "--data", dir, "run", "--node", "hpc", "--gpus", "1", "--dry-run", "--json", "--", "x")
	var p app.Plan
	if err := json.Unmarshal([]byte(stdout), &p); code != ExitOK || err != nil || p.Cluster == nil || p.Cluster.Command != "sbatch --nodes=1 --gres=gpu:1" || !p.Cluster.StartsNow {
		t.Errorf("--json: exit %d, %v: %s", code, err, stdout)
	}
	// A pool machine runs no command job: the image is asked for.
	code, _, stderr = run(t, Hooks{}, "--data", dir, "run", "--node", "self", "--", "nvidia-smi")
	if code != ExitFailure || !strings.Contains(stderr, "an image is required (command jobs without one run on a Slurm cluster only)") {
		t.Errorf("a command job on a pool machine: exit %d, %q", code, stderr)
	}
}

func TestWatchCluster(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	frame := renderWatch([]app.Node{{Name: "hpc", Online: true, GPUs: []app.GPU{}, Cluster: apptest.Cluster(now, "", "")}}, now, 100)
	for _, want := range []string{"Slurm hpc  GPUs a100 3/8 alloc, h100 0/8 alloc  (5 free)  queue 2 running, 2 pending", "gpu03", "drained", "h100 0/8 alloc"} {
		if !strings.Contains(frame, want) {
			t.Errorf("watch:\n%s\nlacks %q", frame, want)
		}
	}
}

// TestWriteJobsWaitReason: ps keeps STATE short for a job queued by
// labpool and says where it waits and why on its own line.
func TestWriteJobsWaitReason(t *testing.T) {
	why := "waits on dgx-h100 for 2 GPUs: GPUs 0, 1, 2, 3: job train of bob; no other machine fits: ws-a100 has 1 of 4 GPUs free"
	list := []app.Job{{Job: jobs.Job{ID: "q1", Name: "sweep", State: jobs.Queued, Error: why, Spec: jobs.Spec{GPUs: 2}, Image: "pytorch:24"},
		NodeName: "dgx-h100", OwnerName: "ana"}}
	var out bytes.Buffer
	if err := writeJobs(&out, list, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "queued ") || strings.Contains(lines[1], "waits on") || lines[2] != "  ↳ "+why {
		t.Errorf("ps:\n%s\nwant STATE queued and the reason on the next line", out.String())
	}
}

// TestClusterRead: the card's time is its last change (slurm.Card writes it
// again only when a read changes something), so a live cluster read every
// 5 s whose figures last changed 6 minutes ago is not "read 6m ago".
func TestClusterRead(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 6, 0, 0, time.UTC)
	tests := []struct {
		name   string
		read   time.Time
		online bool
		want   string
	}{
		{"live, unchanged", now.Add(-6 * time.Minute), true, "unchanged for 6m"},
		{"live, just changed", now, true, "read just now"},
		{"offline", now.Add(-6 * time.Minute), false, "last known, read 6m ago or later"},
		{"never read", time.Time{}, true, "not read yet"},
	}
	for _, tt := range tests {
		if got := clusterRead(tt.read, tt.online, now); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
