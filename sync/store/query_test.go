package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/sync/store"
)

func TestLatestByKind(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	appendN(t, db, "B", "sample.1s", 30)
	appendN(t, db, "A", "sample.1s", 10)
	appendN(t, db, "A", "sample.1m", 50)                                // another kind, later times
	if _, err := db.Append(ctx, "C", "node", "", t0, nil); err != nil { // no samples
		t.Fatal(err)
	}
	// A late write of an old sample does not become the latest.
	if _, err := db.Append(ctx, "B", "sample.1s", "old", t0.Add(-time.Hour), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	got, err := db.LatestByKind(ctx, "sample.1s")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A/k9@" + t0.Add(9*time.Second).Format(time.TimeOnly), "B/k29@" + t0.Add(29*time.Second).Format(time.TimeOnly)}
	var keys []string
	for _, r := range got {
		if r.Kind != "sample.1s" {
			t.Errorf("LatestByKind returned kind %q", r.Kind)
		}
		keys = append(keys, r.Origin+"/"+r.Key+"@"+r.Time.Format(time.TimeOnly))
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("LatestByKind (-want +got):\n%s", diff)
	}
	// An origin whose samples were all pruned drops out.
	if _, err := db.Prune(ctx, "sample.1s", t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	got, _ = db.LatestByKind(ctx, "sample.1s")
	if len(got) != 1 || got[0].Origin != "B" {
		t.Errorf("after prune LatestByKind = %v; want only B", got)
	}
}

func TestRange(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	appendN(t, db, "A", "sample.1s", 10)
	appendN(t, db, "A", "sample.1m", 10)
	appendN(t, db, "B", "sample.1s", 10)
	tests := []struct {
		name     string
		from, to time.Time
		want     []string
	}{
		{"half open", t0.Add(2 * time.Second), t0.Add(5 * time.Second), []string{"k2", "k3", "k4"}},
		{"empty", t0.Add(time.Hour), t0.Add(2 * time.Hour), nil},
		{"all", t0.Add(-time.Hour), t0.Add(time.Hour), []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}},
		{"inverted", t0.Add(5 * time.Second), t0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := db.Range(ctx, "A", "sample.1s", tt.from, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				if r.Origin != "A" || r.Kind != "sample.1s" {
					t.Errorf("Range returned %s/%s", r.Origin, r.Kind)
				}
				got = append(got, r.Key)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Range keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSinceLimitAndOrigins(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	appendN(t, db, "B", "sample.1s", 10)
	appendN(t, db, "A", "sample.1s", 3)
	page, err := db.Since(ctx, "B", 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{5, 6, 7}, seqs(page)); diff != "" {
		t.Errorf("Since(B, 4, 3) seqs (-want +got):\n%s", diff)
	}
	if rest, _ := db.Since(ctx, "B", 10, 0); len(rest) != 0 {
		t.Errorf("Since(B, 10) = %d records; want none", len(rest))
	}
	if huge, err := db.Since(ctx, "B", 1<<64-1, 0); err != nil || len(huge) != 0 {
		t.Errorf("Since(B, max) = %d records, %v; want none", len(huge), err)
	}
	origins, err := db.Origins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A", "B"}, origins); diff != "" {
		t.Errorf("Origins (-want +got):\n%s", diff)
	}
	if c, err := db.Cursor(ctx, "nobody"); err != nil || c != 0 {
		t.Errorf("Cursor(nobody) = %d, %v; want 0", c, err)
	}
	if _, ok, err := db.Latest(ctx, "A", "node", ""); ok || err != nil {
		t.Errorf("Latest(missing) = %v, %v; want false, nil", ok, err)
	}
}

func TestPruneKeepsOtherKindsAndNewer(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	appendN(t, db, "A", "sample.1s", 10)
	appendN(t, db, "B", "sample.1s", 10)
	appendN(t, db, "A", "sample.1m", 10)
	if err := db.Put(ctx, []store.Record{{Origin: "C", Seq: 5, Kind: "sample.1s", Key: "x", Time: t0}}); err != nil {
		t.Fatal(err)
	}
	n, err := db.Prune(ctx, "sample.1s", t0.Add(4*time.Second))
	if err != nil || n != 4+4+1 {
		t.Fatalf("Prune() = %d, %v; want 9", n, err)
	}
	for _, o := range []string{"A", "B"} {
		recs, _ := db.Range(ctx, o, "sample.1s", t0.Add(-time.Hour), t0.Add(time.Hour))
		if len(recs) != 6 || recs[0].Key != "k4" {
			t.Errorf("%s keeps %d sample.1s records; want 6 from k4", o, len(recs))
		}
	}
	if recs, _ := db.Range(ctx, "A", "sample.1m", t0.Add(-time.Hour), t0.Add(time.Hour)); len(recs) != 10 {
		t.Errorf("A keeps %d sample.1m records; want 10", len(recs))
	}
}

// TestReadersBesideWriter reads through two handles while a third writes:
// WAL readers never fail or see a torn batch.
func TestReadersBesideWriter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, path := openTest(t)
	other := reopen(t, path)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for i := range 50 {
			if _, err := db.AppendBatch(ctx, "A", []store.Record{{Kind: "job", Key: keyOf(2 * i)}, {Kind: "job", Key: keyOf(2*i + 1)}}); err != nil {
				done <- err
				return
			}
		}
	}()
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
		}
		for _, h := range []*store.DB{db, other} {
			recs, err := h.Since(ctx, "A", 0, 0)
			if err != nil {
				t.Fatalf("Since during writes: %v", err)
			}
			if len(recs)%2 != 0 {
				t.Fatalf("read %d records: a batch was seen half written", len(recs))
			}
		}
	}
	if recs, _ := other.Since(ctx, "A", 0, 0); len(recs) != 100 {
		t.Errorf("other handle sees %d records; want 100", len(recs))
	}
}

// TestSinceBytes: finding 15, a catch-up frame of large records reads up
// to its byte budget, not its record limit's worth, and says whether it
// stopped there.
func TestSinceBytes(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	var recs []store.Record
	for i := range 10 {
		recs = append(recs, store.Record{Kind: "job", Key: fmt.Sprint("j", i), Time: t0, Data: sample(i, 10_000)})
	}
	if _, err := db.AppendBatch(ctx, "A", recs); err != nil {
		t.Fatal(err)
	}
	size := 2 + 10_000 // key and data of one
	tests := []struct {
		name          string
		seq           uint64
		limit, budget int
		want          []uint64
		full          bool
	}{
		{"three fit", 0, 512, 3*size + size/2, []uint64{1, 2, 3}, true},
		{"exactly three", 0, 512, 3 * size, []uint64{1, 2, 3}, true},
		{"one at least", 4, 512, 1, []uint64{5}, true},
		{"the limit first", 0, 2, 1 << 20, []uint64{1, 2}, false},
		{"all of them", 7, 512, 1 << 20, []uint64{8, 9, 10}, false},
		{"none left", 10, 512, 1 << 20, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, full, err := db.SinceBytes(ctx, "A", tt.seq, tt.limit, tt.budget)
			if err != nil || !equalSeqs(seqs(got), tt.want) || full != tt.full {
				t.Fatalf("SinceBytes = %v, %v, %v; want %v, %v", seqs(got), full, err, tt.want, tt.full)
			}
		})
	}
}

// TestJobsInState: finding 9, a listing of active jobs reads the job
// records in those states alone, of every origin, through their index;
// a record whose state changes moves with it.
func TestJobsInState(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	job := func(origin string, seq uint64, key, state string) store.Record {
		return store.Record{Origin: origin, Seq: seq, Kind: "job", Key: key, Time: t0, Data: fmt.Appendf(nil, `{"id":%q,"state":%q,"pad":"x"}`, key, state)}
	}
	if _, err := db.Receive(ctx, []store.Record{
		job("W", 1, "a", "running"), job("W", 2, "b", "exited"), job("W", 3, "c", "queued"),
		job("V", 1, "d", "failed"), job("V", 2, "e", "running"),
		{Origin: "V", Seq: 3, Kind: "job", Key: "f", Time: t0},                                         // no data
		{Origin: "V", Seq: 4, Kind: "folder", Key: "g", Time: t0, Data: []byte(`{"state":"running"}`)}, // not a job
	}); err != nil {
		t.Fatal(err)
	}
	keys := func(recs []store.Record) string {
		var s []string
		for _, r := range recs {
			s = append(s, r.Origin+"/"+r.Key)
		}
		return strings.Join(s, " ")
	}
	got, err := db.JobsInState(ctx, "queued", "starting", "running")
	if err != nil || keys(got) != "V/e W/a W/c" {
		t.Fatalf("JobsInState = %q, %v; want V/e W/a W/c", keys(got), err)
	}
	if _, err := db.Receive(ctx, []store.Record{job("W", 4, "a", "exited")}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.JobsInState(ctx, "running"); err != nil || keys(got) != "V/e" {
		t.Fatalf("after W/a exited: JobsInState = %q, %v; want V/e", keys(got), err)
	}
}
