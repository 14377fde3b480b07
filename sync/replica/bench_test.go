package replica

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// benchPool is the pool of the replication benchmarks: one follower and
// the 15 other machines it follows.
const benchPool = 16

// benchSample is a typical 1 Hz sample record of a node (a few GPUs and
// the host), as sync/store's benchmarks take it.
const benchSample = 1536

// poolDialer routes each device's requests to its own httptest server.
type poolDialer map[peer.ID]*httptest.Server

func (d poolDialer) Client(id peer.ID, _ []string) *http.Client {
	srv := d[id]
	u, _ := url.Parse(srv.URL)
	return &http.Client{Transport: rewrite{u, srv.Client().Transport}}
}

// benchWriters opens the other machines of the pool, each holding n 1 s
// samples and its node record, serving its stream.
func benchWriters(b *testing.B, n int) (poolDialer, []peer.ID) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	d := poolDialer{}
	var ids []peer.ID
	data := make([]byte, benchSample)
	copy(data, `{"gpus":"`)
	for i := 9; i < len(data)-2; i++ {
		data[i] = 'a'
	}
	copy(data[len(data)-2:], `"}`)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for w := range benchPool - 1 {
		id := testID(fmt.Sprint("writer", w))
		db, err := store.Open(b.TempDir() + "/w.db")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		recs := make([]store.Record, n)
		for j := range recs {
			t := t0.Add(time.Duration(j) * time.Second)
			recs[j] = store.Record{Kind: "sample.1s", Key: fmt.Sprintf("%012d", t.Unix()), Time: t, Data: data}
		}
		if _, err := db.AppendBatch(ctx, id.String(), recs); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Append(ctx, id.String(), "node", "", t0, []byte(`{"name":"gpu-box"}`)); err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(NewServer(db, id.String(), log))
		b.Cleanup(srv.Close)
		d[id] = srv
		ids = append(ids, id)
	}
	return d, ids
}

// BenchmarkCatchUp16 is a member of a pool of 16 machines catching up with
// the 15 others, each holding 2000 samples (an hour away, about): the
// time from start until every cursor is at the top.
func BenchmarkCatchUp16(b *testing.B) {
	const perWriter = 2000
	dial, ids := benchWriters(b, perWriter)
	log := slog.New(slog.DiscardHandler)
	self := testID("reader")
	b.SetBytes(int64(len(ids) * perWriter * benchSample))
	for b.Loop() {
		b.StopTimer()
		r, err := store.Open(b.TempDir() + "/r.db")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		for _, id := range append(ids, self) {
			if _, err := r.PutMember(ctx, store.MemberRow{ID: id.String(), Name: "m", Version: 1, AddedBy: self.String()}); err != nil {
				b.Fatal(err)
			}
		}
		p := NewPeers(DefaultConfig(), r, self, dial, log)
		for _, id := range ids {
			p.Hint(id.String(), "bench")
		}
		b.StartTimer()
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		for caught := 0; caught < len(ids); {
			caught = 0
			for _, id := range ids {
				if c, _ := r.Cursor(ctx, id.String()); c == perWriter+1 {
					caught++
				}
			}
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		cancel()
		<-done
		r.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(ids)*perWriter*b.N)/b.Elapsed().Seconds(), "records/s")
}
