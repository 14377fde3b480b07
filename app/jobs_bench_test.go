package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// benchJobBytes is the size of a job record of the flood: its kind's cap
// (64 KB), less room for the rest of the record.
const benchJobBytes = 64<<10 - 512

// floodJobs fills member's origin in db with job records of about 64 KB in
// state st, as a member of the pool would send them, until the replica
// refuses one (the member is at its quota) or max are held. It returns how
// many the replica holds.
func floodJobs(b *testing.B, db *store.DB, member string, st jobs.State, max int) int {
	ctx := context.Background()
	pad := strings.Repeat("x", benchJobBytes)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	held := 0
	for seq := 1; held < max; {
		var recs []store.Record
		for range 16 {
			j := jobs.Job{ID: fmt.Sprintf("flood-%06d", seq), Name: "flood", Node: member, Owner: member, State: st, Error: pad, Created: t0}
			recs = append(recs, store.Record{Origin: member, Seq: uint64(seq), Kind: app.KindJob, Key: j.ID, Time: t0, Data: mustMarshal(b, j)})
			seq++
		}
		refused, err := db.Receive(ctx, recs)
		if err != nil {
			b.Fatal(err)
		}
		held += len(recs) - len(refused)
		if len(refused) > 0 {
			break
		}
	}
	return held
}

// benchPS is `labpool ps` on the owner's machine, which runs 3 jobs, while
// a member's origin holds job records in state st up to its quota.
func benchPS(b *testing.B, st jobs.State) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(b.TempDir(), "replica.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const self, member = "OWNR-AAAA-BBBB-CCCC", "MMBR-AAAA-BBBB-CCCC"
	now := time.Now()
	for _, id := range []string{self, member} {
		if _, err := db.PutMember(ctx, store.MemberRow{ID: id, Name: strings.ToLower(id[:4]), Version: 1, AddedAt: now, AddedBy: self}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 3 {
		j := jobs.Job{ID: fmt.Sprintf("own-%d", i), Name: "train", Node: self, Owner: self, State: jobs.Running, Created: now}
		if _, err := db.Append(ctx, self, app.KindJob, j.ID, now, mustMarshal(b, j)); err != nil {
			b.Fatal(err)
		}
	}
	held := floodJobs(b, db, member, st, 8192)
	want := 3
	if st == jobs.Running {
		want += held
	}
	r := app.NewReader(db, app.Self{ID: self, Name: "ownr"})
	cpu := cpuTime()
	for b.Loop() {
		list, err := r.Jobs(ctx, false)
		if err != nil || len(list) != want {
			b.Fatalf("ps listed %d jobs (%v), want %d", len(list), err, want)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(held), "flood-records")
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/op")
}

// BenchmarkPSFloodEnded is `ps` while a member holds ended jobs up to its
// quota (the audit's finding 9: 4,300 of them made ps take 1.5 s).
func BenchmarkPSFloodEnded(b *testing.B) { benchPS(b, jobs.Exited) }

// BenchmarkPSFloodActive is `ps` while a member holds as many running jobs
// as its quota lets it: the listing's worst case, every record shown.
func BenchmarkPSFloodActive(b *testing.B) { benchPS(b, jobs.Running) }
