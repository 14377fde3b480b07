package replica

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// counter counts the bytes written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

// benchSendSince is a follower catching up from 0 on n records of size
// bytes of data each: what the server's CPU pays per byte it sends
// (finding 15: large records cost 32 MiB read per 1 MiB frame).
func benchSendSince(b *testing.B, n, size int) {
	ctx := context.Background()
	db, err := store.Open(b.TempDir() + "/w.db")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	data := make([]byte, size)
	copy(data, `{"gpus":"`)
	for i := 9; i < len(data)-2; i++ {
		data[i] = 'a'
	}
	copy(data[len(data)-2:], `"}`)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const origin = "WRITER-AAAA"
	for from := 0; from < n; from += 256 {
		var recs []store.Record
		for j := from; j < min(n, from+256); j++ {
			t := t0.Add(time.Duration(j) * time.Second)
			recs = append(recs, store.Record{Kind: "sample.1s", Key: fmt.Sprintf("%012d", t.Unix()), Time: t, Data: data})
		}
		if _, err := db.AppendBatch(ctx, origin, recs); err != nil {
			b.Fatal(err)
		}
	}
	s := NewServer(db, origin, slog.New(slog.DiscardHandler))
	var sent counter
	cpu := cpuTime()
	for b.Loop() {
		sent = 0
		var (
			since uint64
			buf   []byte
		)
		for more := true; more; {
			if _, more, err = s.sendSince(ctx, &sent, &buf, &since); err != nil {
				b.Fatal(err)
			}
		}
		if since != uint64(n) {
			b.Fatalf("caught up to %d; want %d", since, n)
		}
	}
	b.SetBytes(int64(sent))
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/float64(sent), "cpu-ns/B")
}

// BenchmarkSendSince compares a catch-up of small records (1 s samples of
// 1.5 KB) with one of large records (60 KB): 12 MiB and 60 MiB: the
// target is a CPU cost per byte sent within 2x.
func BenchmarkSendSince(b *testing.B) {
	b.Run("small-1.5KB", func(b *testing.B) { benchSendSince(b, 8000, 1536) })
	b.Run("large-60KB", func(b *testing.B) { benchSendSince(b, 1024, 60<<10) })
}
