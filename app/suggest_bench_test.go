package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// BenchmarkPlanSuggestFlood is the plan of a job this member ran before,
// while another member's machine holds 1,024 ended job records of about 64
// KB that claim to be this member's runs of it (no proof). "remembered" is
// the plan as it is (the launches this machine remembers, read by key);
// "scan-all" reads every job record of the pool, as a first version did:
// the flood's cost, side by side.
func BenchmarkPlanSuggestFlood(b *testing.B) {
	db := openDB(b)
	me, meID := memberKey(1)
	putMember(b, db, meID, "me", false)
	putMember(b, db, mikeID, "mike", false)
	putMember(b, db, alphaID, "alpha", false)
	putNode(b, db, mikeID, NodeRecord{Info: agent.Info{ID: mikeID, Name: "mike"}, Containers: true})
	putNode(b, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}, Containers: true})
	start, end := t0.Add(-10*time.Minute), t0.Add(-5*time.Minute)
	spec := jobs.Spec{Name: "notebook", Image: "nb:1", GPUs: 1}
	proof, err := me.Prove(mikeID, spec)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := jobs.DecodeProof(proof)
	mine := jobs.Job{ID: p.JobID(), Owner: meID, OwnerProof: proof, Name: "notebook", Node: mikeID, Spec: spec, State: jobs.Exited,
		GPUIndexes: []int{0}, GPUs: []string{"GPU-0"}, Started: &start, Finished: &end, Created: start}
	putRecord(b, db, mikeID, KindJob, mine.ID, end, mustJSON(b, mine))

	pad := strings.Repeat("x", 64<<10-1024)
	held := 0
	for seq := 1; held < 1024; {
		var recs []store.Record
		for range 16 {
			f := jobs.Job{ID: fmt.Sprintf("flood-%06d", seq), Name: "notebook", Node: alphaID, Owner: meID, Image: "nb:1", Spec: spec,
				State: jobs.Exited, GPUIndexes: []int{0}, Started: &start, Finished: &end, Created: start, Error: pad}
			data, _ := json.Marshal(f)
			recs = append(recs, store.Record{Origin: alphaID, Seq: uint64(seq), Kind: KindJob, Key: f.ID, Time: end, Data: data})
			seq++
		}
		refused, err := db.Receive(context.Background(), recs)
		if err != nil {
			b.Fatal(err)
		}
		held += len(recs) - len(refused)
		if len(refused) > 0 {
			break
		}
	}
	svc := newService(b, db, Self{ID: meID, Name: "me"}, fakeLive{mikeID: true, alphaID: true}, nil)
	svc.now = func() time.Time { return t0 }
	ctx := context.Background()
	svc.rememberLaunch(ctx, mine)
	nodes, err := svc.Nodes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("remembered", func(b *testing.B) {
		for b.Loop() {
			if _, ok := svc.previousRun(ctx, spec, nodes); !ok {
				b.Fatal("no previous run found")
			}
		}
		b.ReportMetric(float64(held), "flood-records")
	})
	b.Run("scan-all", func(b *testing.B) {
		for b.Loop() {
			if _, ok := scanAllRuns(ctx, svc.Reader, spec, nodes); !ok {
				b.Fatal("no previous run found")
			}
		}
		b.ReportMetric(float64(held), "flood-records")
	})
}

// scanAllRuns is previousRun as a first version wrote it: every job record
// of every machine, decoded and checked.
func scanAllRuns(ctx context.Context, r *Reader, spec jobs.Spec, nodes []Node) (Job, bool) {
	names := map[string]string{}
	for _, n := range nodes {
		names[n.ID] = n.Name
	}
	recs, err := r.jobRecords(ctx, nodes, true)
	if err != nil {
		return Job{}, false
	}
	var best Job
	found := false
	for _, rec := range recs {
		var j jobs.Job
		if json.Unmarshal(rec.Data, &j) != nil || j.ID == "" {
			continue
		}
		j.Node = rec.Origin
		if !sameRun(spec, j) || (found && !j.Finished.After(*best.Finished)) {
			continue
		}
		v := Job{Job: j}
		v.attribute(r.proofRule(rec, j, names), names)
		if v.OwnerVerified && v.Owner == r.self.ID {
			best, found = v, true
		}
	}
	return best, found
}
