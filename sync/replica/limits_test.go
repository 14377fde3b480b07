package replica

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// followOne follows the one member writer of r through srv until the
// test ends.
func followOne(t *testing.T, r *store.DB, srv *httptest.Server, writer string, log *slog.Logger) *Peers {
	t.Helper()
	self := testID("reader")
	if _, err := r.PutMember(context.Background(), store.MemberRow{ID: writer, Name: "w", Version: 1, AddedBy: writer}); err != nil {
		t.Fatal(err)
	}
	p := NewPeers(DefaultConfig(), r, self, httpDialer{srv}, log)
	p.Hint(writer, "test")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// TestFramesSplitByBytes: a catch-up of records that together pass
// MaxFrame goes out in frames that each stay under it (not 512 records
// to a frame whatever their size), and the follower gets them all.
func TestFramesSplitByBytes(t *testing.T) {
	ctx := context.Background()
	writer := testID("writer").String()
	w, r := openDB(t, "w"), openDB(t, "r")
	k, _ := schema.Lookup(schema.KindSample1s)
	const n = 200 // 200 records at the cap: about 12 MiB
	recs := make([]store.Record, n)
	for i := range recs {
		recs[i] = store.Record{Kind: schema.KindSample1s, Key: fmt.Sprintf("%012d", i), Time: time.Unix(int64(i), 0), Data: padded(k.MaxData)}
	}
	if _, err := w.AppendBatch(ctx, writer, recs); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(w, writer, slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)

	resp, err := srv.Client().Get(srv.URL + StreamPath + "?since=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // before srv.Close, which waits for the stream to end
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	for got := 0; got < n; {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %d records: %v", got, err)
		}
		if len(line) > frameBytes+schema.MaxRecord()+1024 {
			t.Fatalf("a frame of %d bytes; want at most %d and one record", len(line), frameBytes)
		}
		fr, err := DecodeFrame(line)
		if err != nil {
			t.Fatal(err)
		}
		got += len(fr.Records)
	}

	followOne(t, r, srv, writer, slog.New(slog.DiscardHandler))
	waitUntil(t, 20*time.Second, "catch-up of 12 MiB", func() bool { c, _ := r.Cursor(ctx, writer); return c == n })
}

// padded is a JSON string of n bytes.
func padded(n int) []byte {
	b := bytes.Repeat([]byte("a"), n)
	b[0], b[n-1] = '"', '"'
	return b
}

// TestFollowRefusesAndGoesOn: a peer's records of an unknown kind, over
// their cap, with a key over its cap, or with terminal escapes or bidi
// controls in their text (finding 13) are refused (and logged once per
// rule); the rest of that frame and the frames after it are stored, and
// the cursor passes the refused ones.
func TestFollowRefusesAndGoesOn(t *testing.T) {
	ctx := context.Background()
	writer := testID("liar").String()
	r := openDB(t, "r")
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rec := func(seq uint64, kind, key string, data []byte) store.Record {
		return store.Record{Origin: writer, Seq: seq, Kind: kind, Key: key, Time: t0, Data: data}
	}
	frames := []Frame{
		{Records: []store.Record{
			rec(1, schema.KindNode, "", []byte(`{"ok":1}`)),
			rec(2, "junk", "", []byte(`{}`)),
			rec(3, "junk", "x", []byte(`{}`)),
			rec(4, schema.KindAlertRules, "", padded(1<<20)),
			rec(5, schema.KindAlert, strings.Repeat("k", 4096), []byte(`{}`)),
			rec(6, schema.KindSample1s, "000000000006", []byte(`{"ok":6}`)),
		}},
		{Records: []store.Record{
			rec(7, schema.KindJob, "j-1", []byte(`{"ok":7}`)),
			rec(8, schema.KindAlert, "a-1", []byte(`{"message":"\u001b]52;c;cm0gLXJmIH4=\u0007GPU 0 hot"}`)),
			rec(9, schema.KindFolder, "data", []byte(`{"name":"data`+"\u202e"+`vsc.exe"}`)),
		}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("since") != "0" {
			http.Error(w, "asked again", http.StatusGone) // the refused records are not asked for again
			return
		}
		w.WriteHeader(http.StatusOK)
		for _, f := range frames {
			json.NewEncoder(w).Encode(f)
		}
		w.(http.Flusher).Flush()
		for { // heartbeats until the follower goes
			select {
			case <-req.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
				w.Write(heartbeat)
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	logs := &captured{}
	followOne(t, r, srv, writer, slog.New(logs))
	waitUntil(t, 10*time.Second, "the frames applied", func() bool { c, _ := r.Cursor(ctx, writer); return c == 9 })
	held, err := r.Since(ctx, writer, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, h := range held {
		seqs = append(seqs, h.Seq)
	}
	if fmt.Sprint(seqs) != "[1 6 7]" {
		t.Errorf("stored seqs %v; want [1 6 7]", seqs)
	}
	if got := logs.count("refused"); got != 3 {
		t.Errorf("%d refusals logged; want 3 (once for each rule: record kinds, record size cap, no control characters in text):\n%s", got, logs)
	}
}

// captured keeps the messages logged at warning and above.
type captured struct {
	mu   sync.Mutex
	msgs []string
}

func (c *captured) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	c.msgs = append(c.msgs, msg)
	return nil
}
func (c *captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captured) WithGroup(string) slog.Handler      { return c }

func (c *captured) count(substr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

func (c *captured) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.msgs, "\n")
}
