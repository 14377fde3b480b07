package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// TestAppendRefusesOverCap: the local writer of a record over its kind's
// cap, or of a kind the schema does not know, gets an error naming the
// rule, and nothing is written.
func TestAppendRefusesOverCap(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	rules, _ := schema.Lookup(schema.KindAlertRules)
	tests := []struct {
		name, kind, key string
		data            []byte
		rule            string
	}{
		{"data over cap", schema.KindAlertRules, "", sample(0, rules.MaxData+1), schema.RuleCap},
		{"key over cap", schema.KindJob, strings.Repeat("j", 129), []byte(`{}`), schema.RuleCap},
		{"unknown kind", "junk", "", []byte(`{}`), schema.RuleKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Append(ctx, "A", tt.kind, tt.key, t0, tt.data)
			if !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), "(rule: "+tt.rule+")") {
				t.Fatalf("Append = %v; want a refusal naming rule %q", err, tt.rule)
			}
		})
	}
	if recs, err := db.Since(ctx, "A", 0, 0); err != nil || len(recs) != 0 {
		t.Fatalf("Since = %d records, %v; want none written", len(recs), err)
	}
	if _, err := db.Append(ctx, "A", schema.KindAlertRules, "", t0, sample(0, rules.MaxData)); err != nil {
		t.Fatalf("Append at the cap: %v", err)
	}
}

// TestReceiveRefusesAndGoesOn: a received record of an unknown kind or
// over its cap is refused, and the records around it are stored; the
// cursor passes the refused one, so it is not asked for again.
func TestReceiveRefusesAndGoesOn(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	node, _ := schema.Lookup(schema.KindNode)
	recs := []store.Record{
		{Origin: "W", Seq: 1, Kind: schema.KindNode, Time: t0, Data: []byte(`{"ok":1}`)},
		{Origin: "W", Seq: 2, Kind: "junk", Key: "x", Time: t0, Data: []byte(`{}`)},
		{Origin: "W", Seq: 3, Kind: schema.KindSample1s, Key: "k1", Time: t0, Data: []byte(`{"ok":3}`)},
		{Origin: "W", Seq: 4, Kind: schema.KindNode, Key: "", Time: t0, Data: sample(4, node.MaxData+1)},
		{Origin: "W", Seq: 5, Kind: schema.KindSample1s, Key: strings.Repeat("k", 300), Time: t0, Data: []byte(`{}`)},
	}
	refused, err := db.Receive(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, r := range refused {
		if !errors.Is(r.Err, schema.ErrRefused) || r.Origin != "W" {
			t.Errorf("refusal %+v: want a schema refusal of W", r)
		}
		got = append(got, r.Seq)
	}
	if want := []uint64{2, 4, 5}; !equalSeqs(got, want) {
		t.Errorf("refused seqs %v; want %v", got, want)
	}
	held, err := db.Since(ctx, "W", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{1, 3}; !equalSeqs(seqs(held), want) {
		t.Errorf("stored seqs %v; want %v", seqs(held), want)
	}
	if c, _ := db.Cursor(ctx, "W"); c != 5 {
		t.Errorf("cursor %d; want 5 (past the refused records)", c)
	}
}

// TestReceiveQuota: an origin's records past its quota are refused, the
// other origins' are not, and a record replacing a held one counts only
// what it adds.
func TestReceiveQuota(t *testing.T) {
	ctx := context.Background()
	const quota = 64 << 10
	db, err := store.OpenWith(filepath.Join(t.TempDir(), "r.db"), store.Options{OriginQuota: quota})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recs []store.Record
	for i := range 40 { // 40 x 4 KiB: over 64 KiB from the 16th on
		recs = append(recs, store.Record{Origin: "W", Seq: uint64(i + 1), Kind: schema.KindSample1s, Key: keyOf(i), Time: t0, Data: sample(i, 4<<10)})
	}
	refused, err := db.Receive(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) == 0 || len(refused) == len(recs) {
		t.Fatalf("refused %d of %d records; want those past the quota only", len(refused), len(recs))
	}
	for _, r := range refused {
		if !strings.Contains(r.Err.Error(), "(rule: "+schema.RuleQuota+")") {
			t.Fatalf("refusal %v; want the origin quota named", r.Err)
		}
	}
	if n := heldBytes(t, db, "W"); n > quota {
		t.Errorf("holds %d bytes of W; want at most its quota %d", n, quota)
	}
	// Another origin has its own quota.
	if refused, err := db.Receive(ctx, []store.Record{{Origin: "V", Seq: 1, Kind: schema.KindNode, Time: t0, Data: sample(0, 4<<10)}}); err != nil || len(refused) != 0 {
		t.Fatalf("V's first record: refused %v, %v", refused, err)
	}
	// W replacing a record it holds adds nothing: taken.
	next := uint64(len(recs) + 1)
	if refused, err := db.Receive(ctx, []store.Record{{Origin: "W", Seq: next, Kind: schema.KindSample1s, Key: keyOf(0), Time: t0, Data: sample(0, 4<<10)}}); err != nil || len(refused) != 0 {
		t.Fatalf("W replacing a record: refused %v, %v", refused, err)
	}
}

// heldBytes sums the keys and data db holds of origin.
func heldBytes(t *testing.T, db *store.DB, origin string) int {
	t.Helper()
	recs, err := db.Since(context.Background(), origin, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		n += len(r.Key) + len(r.Data)
	}
	return n
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
