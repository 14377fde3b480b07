package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// onlineOnly is a Liveness where the machines named are online.
type onlineOnly []string

func (o onlineOnly) Online(id string) bool { return slices.Contains(o, id) }

// TestClusterUI serves the built UI and the local API of a Service whose
// replica holds a Slurm cluster's node record (apptest.Cluster: 3 nodes,
// a100 and h100 GPUs, a queue with a job a member launched with her proof), and
// drives frontend/e2e/cluster_ui.mjs in a real Chromium: the card, the
// machine view and the Launch dialog on the cluster, whose sbatch line is
// the Service's plan. The screenshots stay in $LABPOOL_SHOTS when set.
func TestClusterUI(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	front := filepath.Join(root, "frontend")
	for _, need := range []string{filepath.Join(front, "dist", "index.html"), filepath.Join(front, "node_modules", "playwright-core"), "/usr/bin/chromium"} {
		if _, err := os.Stat(need); err != nil {
			skipOrFail(t, "browser test needs "+need+" (npm run build, Debian's chromium)")
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	db := apptest.OpenReplica(t, filepath.Join(t.TempDir(), "replica.db"))
	now := time.Now().UTC().Truncate(time.Second)
	sm := agent.Sample{Time: now, Host: host.Stats{CPUPercent: 30, MemUsedBytes: 20 << 30, MemTotalBytes: 128 << 30}}
	for i := range 2 {
		sm.GPUs = append(sm.GPUs, gpu.Stats{Index: i, UUID: fmt.Sprint("GPU-self-", i), Name: "NVIDIA A100-SXM4-80GB", UtilPercent: 40,
			MemUsedBytes: 10 << 30, MemTotalBytes: 80 << 30, TempC: 50, PowerW: 200, PowerLimitW: 400, Health: "ok"})
	}
	apptest.WriteMachines(t, db, now, apptest.Machine{ID: selfID, Name: "self", Addr: "192.0.2.1:7420", Sample: sm})
	// paula launched the cluster's job through its agent: its record
	// carries her proof, so the queue and the Jobs view name her.
	paula := apptest.NewLauncher(7)
	if _, err := db.PutMember(context.Background(), store.MemberRow{ID: paula.ID, Name: "paula", Version: 1, AddedAt: now, AddedBy: selfID}); err != nil {
		t.Fatal(err)
	}
	started := now.Add(-2 * time.Hour)
	j := paula.Proven(t, apptest.ClusterID, jobs.Job{Name: "bert-large", State: jobs.Running, Executor: "slurm",
		Hosts: []string{"gpu01"}, Spec: jobs.Spec{GPUs: 2}, Container: "4101", Created: started, Started: &started})
	c := apptest.Cluster(now, j.ID, paula.ID)
	// Peer-supplied strings are text: a job name that is markup stays text.
	c.Queue = append(c.Queue, slurm.QueueJob{ID: "4105", Name: `<img src="x" onerror="window.__pwned=1">`, User: "eve", State: "PENDING", Reason: "Priority", Partition: "gpu"})
	c.Pending++
	apptest.WriteCluster(t, db, now, "hpc", c, j)
	self := app.Self{ID: selfID, ShortID: "SELF-AAAA", Name: "self", APIVersion: app.APIVersion}
	svc := apptest.NewService(db, self, onlineOnly{selfID, apptest.ClusterID}, nil)
	srv := httptest.NewServer(web.Handler(svc, os.DirFS(filepath.Join(front, "dist")), slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)

	shots := os.Getenv("LABPOOL_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command("node", filepath.Join(front, "e2e", "cluster_ui.mjs"), "--url", srv.URL+"/", "--node", "hpc", "--job", j.ID, "--shots", shots, "--timeout", "60")
	cmd.Dir = front
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		OK, CardOnline, CardLaunch bool
		Stage, Error               string
		Card, Machine              clusterRead
		Partitions                 []string
		Runtime, Sbatch, Plan      string
		SbatchTwoNodes, User       string
		JobState, JobHosts         string
		Summary                    string
		Pwned                      bool
		Shots, ConsoleErrors       []string
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("playwright: %v: %s", jerr, out)
	}
	if err != nil || !res.OK {
		t.Fatalf("cluster UI failed at %s: %v %s\n%s", res.Stage, err, res.Error, out)
	}
	t.Logf("screenshots: %v", res.Shots)
	if !res.CardOnline || !res.CardLaunch {
		t.Errorf("the card is online %v with a Launch button %v; want both", res.CardOnline, res.CardLaunch)
	}
	for _, c := range []clusterRead{res.Card, res.Machine} {
		if c.Name != "hpc" || !strings.Contains(c.Runtime, "pyxis") || c.Running != "2 running" || c.Pending != "3 pending" {
			t.Errorf("cluster %q runtime %q %s, %s; want hpc, pyxis, 2 running, 3 pending", c.Name, c.Runtime, c.Running, c.Pending)
		}
		if want := []string{"gpu:up", "debug:up"}; !slices.Equal(c.Partitions, want) {
			t.Errorf("partitions %v; want %v", c.Partitions, want)
		}
		if want := []string{"gpu01:mixed:a100 3/4", "gpu02:idle:a100 0/4", "gpu03:drained:h100 0/8"}; !slices.Equal(c.Nodes, want) {
			t.Errorf("nodes %v; want %v", c.Nodes, want)
		}
		if want := []string{"a100 3 / 8 allocated", "h100 0 / 8 · 8 down"}; !slices.Equal(c.GPUs, want) {
			t.Errorf("GPUs by type %v; want %v", c.GPUs, want)
		}
		if len(c.Queue) < 4 {
			t.Fatalf("queue %+v; want at least 4 entries", c.Queue)
		}
		first, pending := c.Queue[0], c.Queue[2]
		if first.ID != "4101" || first.Owner != "paulalabpool" || !first.Labpool {
			t.Errorf("queue entry %+v; want 4101 of the member paula, launched through labpool", first)
		}
		if pending.ID != "4103" || pending.Reason != "Resources" || pending.Owner != "lab" || pending.Labpool {
			t.Errorf("queue entry %+v; want 4103 pending for Resources, Slurm user lab", pending)
		}
	}
	if len(res.Partitions) != 3 || !strings.Contains(res.Partitions[1], "gpu (default) · a100 3/8 · h100 0/8 · up to 2-00:00:00") {
		t.Errorf("partition choices %q", res.Partitions)
	}
	if !strings.Contains(res.Runtime, "hpc runs images through pyxis") {
		t.Errorf("runtime note %q", res.Runtime)
	}
	if res.Sbatch != "sbatch --nodes=1 --gres=gpu:2 --time=120" || !strings.Contains(res.Plan, "can start now") {
		t.Errorf("plan %q: %q; want 2 GPUs for 120 minutes, starting now", res.Sbatch, res.Plan)
	}
	if res.SbatchTwoNodes != "sbatch --nodes=2 --ntasks-per-node=1 --gres=gpu:2 --time=120" {
		t.Errorf("two nodes: %q", res.SbatchTwoNodes)
	}
	if !strings.Contains(res.User, "never as the cluster agent's own user") {
		t.Errorf("the dialog says %q of who the job runs as", res.User)
	}
	if res.JobState != "running" || res.JobHosts != "· gpu01" {
		t.Errorf("the cluster's job reads %q on %q; want running on gpu01", res.JobState, res.JobHosts)
	}
	if !strings.Contains(res.Summary, "18 GPUs") {
		t.Errorf("the header says %q; want the pool's 2 GPUs and the cluster's 16", res.Summary)
	}
	if res.Pwned {
		t.Error("a queue entry's name was rendered as markup")
	}
	if len(res.ConsoleErrors) > 0 {
		t.Errorf("console errors: %v", res.ConsoleErrors)
	}
}

// clusterRead is what cluster_ui.mjs reads of a cluster panel.
type clusterRead struct {
	Name, Runtime, Running, Pending string
	GPUs, Partitions, Nodes         []string
	Queue                           []struct {
		ID, State, Reason, Owner string
		Labpool                  bool
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}
