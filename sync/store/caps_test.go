package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// folderCap is the count cap of folder records, the smallest of a kind
// with keys.
func folderCap(t *testing.T) int {
	k, _ := schema.Lookup(schema.KindFolder)
	if k.MaxRecords <= 0 || k.MaxRecords > 4096 {
		t.Fatalf("folder count cap %d: the tests want a small one", k.MaxRecords)
	}
	return k.MaxRecords
}

func folders(origin string, from, n int) []store.Record {
	var recs []store.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, store.Record{Origin: origin, Seq: uint64(i + 1), Kind: schema.KindFolder, Key: fmt.Sprint("share-", i), Time: t0, Data: []byte(`{"name":"x"}`)})
	}
	return recs
}

// wantRule fails unless every refusal names rule.
func wantRule(t *testing.T, refused []store.Refused, rule string) {
	t.Helper()
	for _, r := range refused {
		if !errors.Is(r.Err, schema.ErrRefused) || !strings.Contains(r.Err.Error(), "(rule: "+rule+")") {
			t.Fatalf("refusal %v; want rule %q named", r.Err, rule)
		}
	}
}

// TestReceiveCountCap: finding 9, a member filling its origin with records
// of one kind: past the kind's count cap they are refused, naming the
// rule; a new version of a record held still comes in, and so do other
// kinds and other origins.
func TestReceiveCountCap(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	n := folderCap(t)
	refused, err := db.Receive(ctx, folders("W", 0, n+20))
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 20 {
		t.Fatalf("refused %d records; want the 20 past the cap of %d", len(refused), n)
	}
	wantRule(t, refused, schema.RuleCount)
	if c, _ := db.Cursor(ctx, "W"); c != uint64(n+20) {
		t.Errorf("cursor %d; want %d, past the refused records", c, n+20)
	}
	again := folders("W", 0, 1)
	again[0].Seq = uint64(n + 21)
	again = append(again, store.Record{Origin: "W", Seq: uint64(n + 22), Kind: schema.KindNode, Time: t0, Data: []byte(`{}`)})
	again = append(again, folders("V", 0, 1)...)
	if refused, err := db.Receive(ctx, again); err != nil || len(refused) != 0 {
		t.Fatalf("a new version, another kind, another origin: refused %v, %v", refused, err)
	}
}

// TestReceiveControlQuota: control records of one origin (its jobs, here)
// are refused past ControlQuota, naming the rule, while its history still
// comes in under OriginQuota.
func TestReceiveControlQuota(t *testing.T) {
	ctx := context.Background()
	const control = 64 << 10
	db, err := store.OpenWith(filepath.Join(t.TempDir(), "r.db"), store.Options{ControlQuota: control})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recs []store.Record
	for i := range 40 { // 40 x 4 KiB of jobs: over 64 KiB from the 16th on
		recs = append(recs, store.Record{Origin: "W", Seq: uint64(i + 1), Kind: schema.KindJob, Key: fmt.Sprint("job-", i), Time: t0, Data: job(i, "running", 4<<10)})
	}
	for i := range 40 {
		recs = append(recs, store.Record{Origin: "W", Seq: uint64(41 + i), Kind: schema.KindSample1s, Key: keyOf(i), Time: t0, Data: sample(i, 4<<10)})
	}
	refused, err := db.Receive(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) == 0 || len(refused) >= 40 {
		t.Fatalf("refused %d records; want the jobs past the control quota only", len(refused))
	}
	wantRule(t, refused, schema.RuleControlQuota)
	for _, r := range refused {
		if r.Kind != schema.KindJob {
			t.Fatalf("refused a %s record; want jobs only", r.Kind)
		}
	}
	if n := heldBytes(t, db, "W"); n <= control {
		t.Errorf("holds %d bytes of W; want its history past the control quota too", n)
	}
}

// TestAppendCountCap: the origin's own writer is refused past a kind's
// count cap too, naming the rule, and nothing of the batch is written; a
// new version of a record held is not.
func TestAppendCountCap(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	n := folderCap(t)
	recs := folders("", 0, n)
	for i := range recs {
		recs[i].Seq = 0
	}
	if _, err := db.AppendBatch(ctx, "A", recs); err != nil {
		t.Fatal(err)
	}
	_, err := db.Append(ctx, "A", schema.KindFolder, "one-more", t0, []byte(`{}`))
	if !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), "(rule: "+schema.RuleCount+")") {
		t.Fatalf("Append past the cap = %v; want a refusal naming rule %q", err, schema.RuleCount)
	}
	if _, ok, _ := db.Latest(ctx, "A", schema.KindFolder, "one-more"); ok {
		t.Error("the refused record was written")
	}
	if _, err := db.Append(ctx, "A", schema.KindFolder, "share-0", t0, []byte(`{"name":"y"}`)); err != nil {
		t.Errorf("a new version at the cap: %v", err)
	}
}

// TestAppendControlQuota: the origin's own writer is refused past
// ControlQuota, naming the rule.
func TestAppendControlQuota(t *testing.T) {
	ctx := context.Background()
	db, err := store.OpenWith(filepath.Join(t.TempDir(), "r.db"), store.Options{ControlQuota: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 3 {
		if _, err := db.Append(ctx, "A", schema.KindJob, fmt.Sprint("job-", i), t0, job(i, "queued", 4<<10)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.Append(ctx, "A", schema.KindJob, "job-3", t0, job(3, "running", 8<<10-100))
	if !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), "(rule: "+schema.RuleControlQuota+")") {
		t.Fatalf("Append past the control quota = %v; want a refusal naming rule %q", err, schema.RuleControlQuota)
	}
}

// job is a job record's data of about n bytes in state.
func job(i int, state string, n int) []byte {
	b := fmt.Appendf(nil, `{"id":"job-%d","state":%q,"pad":"`, i, state)
	for len(b) < n-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

// TestEndedJobsAreHistory: the records of ended jobs are a machine's
// history of use, kept under OriginQuota and the job count cap, never
// under the control quota that bounds what `ps` reads: a busy machine's
// thousands of ended jobs do not lock out its next one. A job that ends
// frees its control bytes; one that runs again takes them back; a record
// whose data SQLite reads as naming an active state counts as control,
// whatever a second "state" key says to Go.
func TestEndedJobsAreHistory(t *testing.T) {
	ctx := context.Background()
	const control = 16 << 10
	db, err := store.OpenWith(filepath.Join(t.TempDir(), "r.db"), store.Options{ControlQuota: control})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 40 { // 160 KiB of ended jobs, ten times the control quota
		if _, err := db.Append(ctx, "A", schema.KindJob, fmt.Sprint("old-", i), t0, job(i, "exited", 4<<10)); err != nil {
			t.Fatalf("ended job %d: %v", i, err)
		}
	}
	for i := range 3 {
		if _, err := db.Append(ctx, "A", schema.KindJob, fmt.Sprint("job-", i), t0, job(i, "running", 4<<10)); err != nil {
			t.Fatalf("running job %d: %v", i, err)
		}
	}
	refusedControl := func(err error) bool {
		return errors.Is(err, schema.ErrRefused) && strings.Contains(err.Error(), "(rule: "+schema.RuleControlQuota+")")
	}
	if _, err := db.Append(ctx, "A", schema.KindJob, "job-3", t0, job(3, "running", 8<<10-100)); !refusedControl(err) {
		t.Fatalf("a running job past the control quota = %v; want rule %q", err, schema.RuleControlQuota)
	}
	if _, err := db.Append(ctx, "A", schema.KindJob, "job-0", t0, job(0, "exited", 4<<10)); err != nil {
		t.Fatalf("job-0 ends: %v", err)
	}
	if _, err := db.Append(ctx, "A", schema.KindJob, "job-3", t0, job(3, "running", 8<<10-100)); err != nil {
		t.Fatalf("job-3 after job-0 ended: %v", err)
	}
	if _, err := db.Append(ctx, "A", schema.KindJob, "old-0", t0, job(0, "queued", 4<<10)); !refusedControl(err) {
		t.Fatalf("an ended job queued again past the quota = %v; want rule %q", err, schema.RuleControlQuota)
	}
	// Two "state" keys: SQLite's json_extract reads the first, Go's
	// encoding/json the last. What `ps` lists is what counts.
	twice := []byte(`{"id":"x","state":"running","state":"exited","pad":"` + strings.Repeat("x", 8<<10) + `"}`)
	if _, err := db.Append(ctx, "A", schema.KindJob, "twice", t0, twice); !refusedControl(err) {
		t.Fatalf("a record listed as running but named exited last = %v; want rule %q", err, schema.RuleControlQuota)
	}
	active, err := db.JobsInState(ctx, schema.ActiveJobStates...)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 3 {
		t.Errorf("%d active job records; want 3 (job-1, job-2, job-3)", len(active))
	}
}

// TestCountCapAfterPrune: records pruned free their places.
func TestCountCapAfterPrune(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	n := folderCap(t)
	if refused, err := db.Receive(ctx, folders("W", 0, n)); err != nil || len(refused) != 0 {
		t.Fatalf("refused %v, %v", refused, err)
	}
	if _, err := db.Prune(ctx, schema.KindFolder, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	more := folders("W", n, n)
	if refused, err := db.Receive(ctx, more); err != nil || len(refused) != 0 {
		t.Fatalf("after a prune: refused %d, %v; want room for %d", len(refused), err, n)
	}
}

// TestTextRefused: finding 13, a member's record whose text carries a
// terminal escape (an alert message writing the clipboard with OSC 52) is
// refused on ingest, naming the rule, and the records around it are
// stored; the origin's own writer is refused the same.
func TestTextRefused(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	recs := []store.Record{
		{Origin: "W", Seq: 1, Kind: schema.KindAlert, Key: "a1", Time: t0, Data: []byte(`{"message":"GPU 0 hot\nfor 5 min"}`)},
		{Origin: "W", Seq: 2, Kind: schema.KindAlert, Key: "a2", Time: t0, Data: []byte(`{"message":"\u001b]52;c;cm0gLXJmIH4=\u0007hot"}`)},
		{Origin: "W", Seq: 3, Kind: schema.KindJob, Key: "j1", Time: t0, Data: []byte(`{"name":"train` + "\u202e" + `gpj.sh"}`)},
		{Origin: "W", Seq: 4, Kind: schema.KindNode, Time: t0, Data: []byte(`{"name":"gpu1"}`)},
	}
	refused, err := db.Receive(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, r := range refused {
		got = append(got, r.Seq)
	}
	if !equalSeqs(got, []uint64{2, 3}) {
		t.Fatalf("refused seqs %v; want [2 3]", got)
	}
	wantRule(t, refused, schema.RuleText)
	if held, _ := db.Since(ctx, "W", 0, 0); !equalSeqs(seqs(held), []uint64{1, 4}) {
		t.Errorf("stored seqs %v; want [1 4]", seqs(held))
	}
	_, err = db.Append(ctx, "A", schema.KindAlert, "a1", t0, []byte(`{"message":"\u001b[2J"}`))
	if !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), "(rule: "+schema.RuleText+")") {
		t.Fatalf("Append = %v; want a refusal naming rule %q", err, schema.RuleText)
	}
}
