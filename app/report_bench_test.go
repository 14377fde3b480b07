package app_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/app/history/histtest"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// BenchmarkReport computes the pool's report from a viewer's replica of 16
// machines of 8 GPUs with 30 days of history, a job a day on each machine
// (2 GPUs for 20 hours, launched by one of 4 members, with their proof;
// every third one a half share of one GPU instead), a Slurm cluster's agent
// with a 2-node job a day (4 GPUs on each for 20 hours) and energy readings
// every quarter hour: over a week (1 min points) and over 30 days (15 min
// points). The 16 machines are the devices of 4 people (4 each; the jobs
// are launched from the first device of each, and every fifth job from a
// second device of its person): by member (a person) and by device, side
// by side.
func BenchmarkReport(b *testing.B) {
	ctx := context.Background()
	end := time.Now().Truncate(time.Second)
	path := filepath.Join(b.TempDir(), "replica.db")
	var nodes []histtest.Node
	var signers []jobs.LaunchSigner // each machine's user: the first 4 launch the jobs, each signing its own
	for i := range 16 {
		seed := make([]byte, ed25519.SeedSize)
		seed[0] = byte(i + 1)
		priv := ed25519.NewKeyFromSeed(seed)
		pub := priv.Public().(ed25519.PublicKey)
		signers = append(signers, jobs.LaunchSigner{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }})
		nodes = append(nodes, histtest.Node{ID: folders.DeviceID(pub), GPUs: 8, Span: 30 * 24 * time.Hour, End: end})
	}
	if err := histtest.WriteFile(ctx, path, histtest.Compact, nodes...); err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i, n := range nodes {
		person := nodes[i%4].ID // the 4 people: the first 4 machines are their first devices
		row := store.MemberRow{ID: n.ID, Name: fmt.Sprintf("gpu-%02d", i), Version: 1, AddedAt: end, AddedBy: nodes[0].ID,
			Person: person, PersonName: fmt.Sprintf("person-%d", i%4)}
		if _, err := db.PutMember(ctx, row); err != nil {
			b.Fatal(err)
		}
		var recs []store.Record
		put := func(kind, key string, tm time.Time, v any) {
			data, _ := json.Marshal(v)
			recs = append(recs, store.Record{Origin: n.ID, Seq: uint64(len(recs) + 1), Kind: kind, Key: key, Time: tm, Data: data})
		}
		for d := range 30 {
			started := end.Add(-time.Duration(d+1) * 24 * time.Hour)
			finished := started.Add(20 * time.Hour)
			spec, gpus := jobs.Spec{GPUs: 2}, []int{d % 8, (d + 1) % 8}
			if d%3 == 0 {
				spec, gpus = jobs.Spec{GPUs: 1, GPUShare: 0.5}, gpus[:1]
			}
			launcher := d % 4
			if d%5 == 0 {
				launcher += 4 // a second device of the same person
			}
			proof, err := signers[launcher].Prove(n.ID, spec)
			if err != nil {
				b.Fatal(err)
			}
			p, _ := jobs.DecodeProof(proof)
			j := jobs.Job{ID: p.JobID(), Name: "train", Node: n.ID, Owner: nodes[launcher].ID, OwnerProof: proof, Spec: spec,
				State: jobs.Exited, GPUIndexes: gpus, Started: &started, Finished: &finished}
			put(app.KindJob, j.ID, finished, j)
		}
		for tm := end.Add(-30 * 24 * time.Hour); tm.Before(end); tm = tm.Add(15 * time.Minute) {
			er := app.EnergyReading{Time: tm}
			for g := range 8 {
				er.GPUs = append(er.GPUs, app.GPUEnergy{Index: g, MJ: uint64(tm.Sub(end.Add(-31*24*time.Hour)).Seconds()) * 200_000})
			}
			recs = append(recs, store.Record{Origin: n.ID, Seq: uint64(len(recs) + 1), Kind: app.KindEnergy, Key: history.Key(tm), Time: tm, Data: app.EncodeEnergy(er)})
		}
		if err := db.Put(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	putCluster(b, ctx, db, signers[:4], nodes[:4], end)
	r := app.NewReader(db, app.Self{ID: nodes[0].ID})
	for _, window := range []struct {
		name  string
		since int
	}{{"7d", 7 * 24 * 3600}, {"30d", 30 * 24 * 3600}} {
		for _, g := range []struct {
			by     string
			people bool // a row per person (4), or per device (more)
		}{{app.ReportByDevice, false}, {app.ReportByMember, true}} {
			b.Run(window.name+"/by-"+g.by, func(b *testing.B) {
				cpu0 := cpuTime()
				for b.Loop() {
					rep, err := r.Report(ctx, app.ReportRequest{Since: window.since, Until: end.Unix(), By: g.by})
					if err != nil || (len(rep.Rows) == 4) != g.people || len(rep.Rows) < 4 || rep.Totals.EnergySource == "" {
						b.Fatalf("report: %v, %d rows, energy from %q", err, len(rep.Rows), rep.Totals.EnergySource)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// putCluster adds to db a Slurm cluster's agent (2 nodes of 8 GPUs) and a
// job a day of it for the last 30 days before end, on 2 nodes with 4 GPUs
// each for 20 hours, launched by one of the members (signers, of nodes).
func putCluster(b *testing.B, ctx context.Context, db *store.DB, signers []jobs.LaunchSigner, nodes []histtest.Node, end time.Time) {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 99
	id := folders.DeviceID(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	if _, err := db.PutMember(ctx, store.MemberRow{ID: id, Name: "hpc-login", Version: 1, AddedAt: end, AddedBy: nodes[0].ID}); err != nil {
		b.Fatal(err)
	}
	cluster := &slurm.Cluster{Name: "hpc", GPUs: []slurm.GPUCount{{Type: "h100", Total: 16}}}
	data, _ := json.Marshal(app.NodeRecord{Info: agent.Info{ID: id, Name: "hpc-login"}, Cluster: cluster})
	recs := []store.Record{{Origin: id, Seq: 1, Kind: app.KindNode, Time: end, Data: data}}
	for d := range 30 {
		started := end.Add(-time.Duration(d+1) * 24 * time.Hour)
		finished := started.Add(20 * time.Hour)
		spec := jobs.Spec{Nodes: 2, GPUsPerNode: 4}
		proof, err := signers[d%len(signers)].Prove(id, spec)
		if err != nil {
			b.Fatal(err)
		}
		p, _ := jobs.DecodeProof(proof)
		j := jobs.Job{ID: p.JobID(), Name: "sweep", Node: id, Owner: nodes[d%len(nodes)].ID, OwnerProof: proof, Spec: spec,
			Executor: "slurm", Container: fmt.Sprint(1000 + d), State: jobs.Exited, Started: &started, Finished: &finished}
		data, _ := json.Marshal(j)
		recs = append(recs, store.Record{Origin: id, Seq: uint64(len(recs) + 1), Kind: app.KindJob, Key: j.ID, Time: finished, Data: data})
	}
	if err := db.Put(ctx, recs); err != nil {
		b.Fatal(err)
	}
}
