package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// BenchmarkNodesCluster lists the pool with a cluster machine whose queue
// is full (slurm.QueueCap entries, none or 100 of them labpool's, each
// checked against its job record): what the dashboard pays each refresh
// for the cluster's card.
func BenchmarkNodesCluster(b *testing.B) {
	for _, every := range []int{0, 2} {
		b.Run(fmt.Sprintf("labpool=%d", map[int]int{0: 0, 2: slurm.QueueCap / 2}[every]), func(b *testing.B) { benchNodesCluster(b, every) })
	}
}

// benchNodesCluster is BenchmarkNodesCluster with every every-th entry
// labpool's (0: none).
func benchNodesCluster(b *testing.B, every int) {
	ctx := context.Background()
	db := apptest.OpenReplica(b, filepath.Join(b.TempDir(), "replica.db"))
	now := time.Now().UTC().Truncate(time.Second)
	c := apptest.Cluster(now, "", "")
	c.Queue = nil
	var js []jobs.Job
	for i := range slurm.QueueCap {
		q := slurm.QueueJob{ID: fmt.Sprint(5000 + i), Name: "sweep", User: "lab", State: "PENDING", Reason: "Priority", Partition: "gpu", GPUs: 1, Submitted: now}
		if every > 0 && i%every == 0 {
			q.LabpoolJob, q.Owner = fmt.Sprint("job-", i), apptest.SelfID
			js = append(js, jobs.Job{ID: q.LabpoolJob, Name: "sweep", Node: apptest.ClusterID, Owner: apptest.SelfID, State: jobs.Queued, Executor: "slurm"})
		}
		c.Queue = append(c.Queue, q)
	}
	apptest.WriteCluster(b, db, now, "hpc", c, js...)
	r := app.NewReader(db, app.Self{ID: apptest.SelfID, Name: "self"})
	for b.Loop() {
		nodes, err := r.Nodes(ctx)
		if err != nil || len(nodes) != 2 || nodes[1].Cluster == nil || (every > 0 && nodes[1].ClusterOwners[apptest.SelfID] != "self") {
			b.Fatalf("listed %d nodes (%v)", len(nodes), err)
		}
	}
}
