package history_test

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/app/history/histtest"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
)

func testPeerID(s string) peer.ID {
	sum := sha256.Sum256([]byte(s))
	return peer.NewID(sum[:])
}

// dialer sends the requests for each device to its httptest server.
type dialer map[peer.ID]*httptest.Server

func (d dialer) Client(id peer.ID, _ []string) *http.Client {
	srv := d[id]
	u, _ := url.Parse(srv.URL)
	return &http.Client{Transport: rewrite{u, srv.Client().Transport}}
}

type rewrite struct {
	u  *url.URL
	rt http.RoundTripper
}

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.u.Scheme, r.u.Host
	return r.rt.RoundTrip(req)
}

func openStore(t testing.TB, name string) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), name+".db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// appendOwn writes n's history as its own records, oldest first across
// tiers (as a recorder writes them), and returns their count.
func appendOwn(t testing.TB, db *store.DB, n histtest.Node) int {
	t.Helper()
	recs, err := histtest.Records(n, histtest.Compact)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(recs, func(a, b store.Record) int { return a.Time.Compare(b.Time) })
	for i := range recs {
		recs[i].Origin, recs[i].Seq = "", 0
	}
	total := len(recs)
	for len(recs) > 0 {
		k := min(len(recs), 2000)
		if _, err := db.AppendBatch(context.Background(), n.ID, recs[:k]); err != nil {
			t.Fatal(err)
		}
		recs = recs[k:]
	}
	return total
}

// TestBackfillAfterOffline: a laptop that followed 2 members, then slept 8
// hours, catches up on reconnect with what their tiers hold (the last hour
// of seconds, 8 hours of minutes, quarters and 3 h points: about 4,100
// records each, not the 28,800 seconds it missed), in the background of
// the live samples that keep arriving; then its charts of those 8 hours
// are full and its meters follow each second.
func TestBackfillAfterOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 8 hours of history of 2 machines")
	}
	if raceEnabled {
		t.Skip("the race detector slows SQLite tenfold: the scenario's timing means nothing under it (go test without -race runs it)")
	}
	backfill(t, 2)
}

// BenchmarkBackfill is TestBackfillAfterOffline with 16 members: the time
// from reconnect until every member's latest sample is live again, and the
// CPU time it took. Run with -benchtime 1x.
func BenchmarkBackfill(b *testing.B) {
	for b.Loop() {
		took, backlog := backfill(b, 16)
		b.ReportMetric(took.Seconds(), "s-to-live")
		b.ReportMetric(float64(backlog), "records")
	}
}

// lag is how far (in sample time, 10 samples a second) a caught-up
// laptop's latest sample of a member may trail the member's own: a second.
const lag = 10 * time.Second

// backfill runs the scenario with n members and returns how long the
// laptop took to catch up, and the records it was missing.
func backfill(t testing.TB, members int) (time.Duration, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	laptopID := testPeerID("laptop")
	laptop := openStore(t, "laptop")
	now := time.Now().Truncate(time.Second)
	asleep := now.Add(-8 * time.Hour)
	d := dialer{}
	type member struct {
		id  peer.ID
		db  *store.DB
		rec *history.Recorder
	}
	var ms []member
	for i := range members {
		id := testPeerID(string(rune('a' + i)))
		db := openStore(t, id.String()[:7])
		// the hour before the laptop slept, which it holds
		appendOwn(t, db, histtest.Node{ID: id.String(), GPUs: 8, Span: time.Hour, End: asleep})
		held, err := db.Since(ctx, id.String(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := laptop.Put(ctx, held); err != nil {
			t.Fatal(err)
		}
		// the 8 hours since, as the member's tiers hold them now (pruned)
		appendOwn(t, db, histtest.Node{ID: id.String(), GPUs: 8, Span: 8 * time.Hour, End: now})
		rs := replica.NewServer(db, id.String(), log)
		rs.Skip = history.SkipOnCatchUp // as the daemon sets it
		srv := httptest.NewServer(rs)
		t.Cleanup(srv.Close)
		d[id] = srv
		if _, err := laptop.PutMember(ctx, store.MemberRow{ID: id.String(), Name: "m", Version: 1, AddedBy: id.String()}); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, member{id, db, history.NewRecorder(db, id.String(), log)})
	}
	backlog := 0
	cursors := map[string]uint64{}
	for _, m := range ms {
		c, _ := laptop.Cursor(ctx, m.id.String())
		cursors[m.id.String()] = c
		recs, err := m.db.Since(ctx, m.id.String(), c, 0)
		if err != nil {
			t.Fatal(err)
		}
		backlog += len(recs)
	}

	// the members keep sampling (at 10 Hz here, a second of sample time each)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var mu sync.Mutex
	newest := map[string]time.Time{}
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for tm := now; ; tm = tm.Add(time.Second) {
				if err := m.rec.Record(ctx, histtest.Sample(tm, 8)); err != nil && ctx.Err() == nil {
					t.Error(err)
				}
				mu.Lock()
				newest[m.id.String()] = tm
				mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}

	p := replica.NewPeers(replica.DefaultConfig(), laptop, laptopID, d, log)
	for _, m := range ms {
		p.Hint(m.id.String(), "test")
	}
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.Run(ctx)
	}()

	st := history.NewStore(laptop)
	caughtUp := func() bool {
		latest, err := st.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			want, sampled := newest[m.id.String()]
			if s, ok := latest[m.id.String()]; !ok || !sampled || s.Time.Before(want.Add(-lag)) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !caughtUp() {
		if time.Now().After(deadline) {
			t.Fatalf("the laptop did not catch up within a minute (backlog of %d records)", backlog)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	fetched := 0
	for _, m := range ms {
		recs, err := laptop.Since(ctx, m.id.String(), cursors[m.id.String()], 0)
		if err != nil {
			t.Fatal(err)
		}
		fetched += len(recs)
	}
	if perMember := backlog / members; perMember > 3600+480+32+3+2 {
		t.Errorf("a member holds a backlog of %d records after 8 hours; want the tiers' hour of seconds and the coarser points", perMember)
	}
	// the seconds older than CatchUpAge stay behind; the catch-up's own
	// seconds (10 a second of wall time) come live
	if limit := members * (300 + 480 + 32 + 3 + 2 + int(took/time.Millisecond)/100*2 + 60); fetched > limit {
		t.Errorf("the laptop fetched %d records of %d members, want at most %d", fetched, members, limit)
	}
	t.Logf("held %d records for the laptop, sent %d, caught up in %v", backlog, fetched, took.Round(time.Millisecond))

	// the meters follow: the latest sample of every member stays within a
	// second (of wall time: 10 samples) of the member's own for 2 s
	for range 20 {
		if !caughtUp() {
			t.Errorf("a member's latest sample fell behind after the catch-up")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// and the charts of the 8 hours are full: minutes, and the seconds of
	// the last minutes
	for _, m := range ms {
		from := now.Add(-8 * time.Hour)
		res := history.Choose(from, now, now)
		pts, err := st.Points(ctx, m.id.String(), res, from, now)
		if err != nil {
			t.Fatal(err)
		}
		if res.Name != "1m" || len(pts) < 479 {
			t.Errorf("member %s: %d points of %s over the 8 hours, want 480 minutes", m.id.String()[:7], len(pts), res.Name)
		}
		// the seconds not yet CatchUpAge old at the reconnect (the setup
		// took some of the 5 minutes before now)
		since := start.Add(-history.CatchUpAge + 2*time.Second).Truncate(time.Second)
		secs, err := st.Points(ctx, m.id.String(), history.Resolutions[0], since, now)
		if want := int(now.Sub(since) / time.Second); err != nil || len(secs) < want-1 {
			t.Errorf("member %s: %d points of 1 s since %v (%v), want %d", m.id.String()[:7], len(secs), since, err, want)
		}
	}
	return took, backlog
}
