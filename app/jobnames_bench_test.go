package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// BenchmarkNodesHeldGPUs lists 20 nodes whose 4 GPUs each are held by a
// job (with the job's record and 200 older ones in the replica): what the
// dashboard pays each refresh, names of jobs and owners included.
func BenchmarkNodesHeldGPUs(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(b.TempDir(), "replica.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	end := time.Now().Truncate(time.Second)
	var self string
	for i := range benchNodes {
		id := fmt.Sprintf("N%03d-AAAA-BBBB-CCCC", i)
		if i == 0 {
			self = id
		}
		if _, err := db.PutMember(ctx, store.MemberRow{ID: id, Name: fmt.Sprintf("node-%02d", i), Version: 1, AddedAt: end, AddedBy: self}); err != nil {
			b.Fatal(err)
		}
		var recs []store.Record
		for k := range 200 { // ended jobs: history
			j := jobs.Job{ID: fmt.Sprintf("old-%d-%d", i, k), Name: "old", Owner: self, State: jobs.Exited}
			recs = append(recs, store.Record{Kind: app.KindJob, Key: j.ID, Time: end.Add(-time.Hour), Data: mustMarshal(b, j)})
		}
		held := fmt.Sprintf("job-%d", i)
		recs = append(recs, store.Record{Kind: app.KindJob, Key: held, Time: end, Data: mustMarshal(b, jobs.Job{ID: held, Name: "train", Owner: self, State: jobs.Running})})
		for s := range 60 {
			tm := end.Add(-time.Duration(60-s) * time.Second)
			sm := benchSample(tm, s)
			for g := range sm.GPUs {
				sm.Holding.HoldGPU(sm.GPUs[g].UUID, alloc.Holder{Kind: alloc.Job, ID: held})
			}
			recs = append(recs, store.Record{Kind: history.KindSample1s, Key: fmt.Sprintf("%012d", tm.Unix()), Time: tm, Data: mustMarshal(b, sm)})
		}
		for j := range recs {
			recs[j].Origin, recs[j].Seq = id, uint64(j+1)
		}
		if err := db.Put(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	svc := app.NewReader(db, app.Self{ID: self})
	for b.Loop() {
		nodes, err := svc.Nodes(ctx)
		if err != nil || len(nodes) != benchNodes || len(nodes[1].GPUs) != 4 || nodes[1].GPUs[0].Job == "" {
			b.Fatalf("listed %d nodes (%v)", len(nodes), err)
		}
	}
}
