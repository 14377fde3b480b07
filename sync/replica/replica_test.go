package replica

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

func openDB(t *testing.T, name string) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), name+".db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func testID(s string) peer.ID {
	sum := sha256.Sum256([]byte(s))
	return peer.NewID(sum[:])
}

// httpDialer sends every request to one httptest server.
type httpDialer struct{ srv *httptest.Server }

func (d httpDialer) Client(peer.ID, []string) *http.Client {
	u, _ := url.Parse(d.srv.URL)
	return &http.Client{Transport: rewrite{u, d.srv.Client().Transport}}
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

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFollowCatchUpAndLive: a follower catches up 1000 records, then gets
// new ones live, learns the member set, and sees the writer go offline.
func TestFollowCatchUpAndLive(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	writerID, readerID := testID("writer"), testID("reader")
	w, r := openDB(t, "writer"), openDB(t, "reader")
	for i := range 1000 {
		data := fmt.Appendf(nil, `{"i":%d}`, i)
		if _, err := w.Append(ctx, writerID.String(), "sample.1s", fmt.Sprintf("%012d", i), time.Unix(int64(i), 0), data); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []peer.ID{writerID, readerID} {
		if _, err := w.PutMember(ctx, store.MemberRow{ID: id.String(), Name: "m", Version: 1, AddedBy: writerID.String()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.PutMember(ctx, store.MemberRow{ID: writerID.String(), Name: "m", Version: 1, AddedBy: writerID.String()}); err != nil {
		t.Fatal(err)
	}
	server := NewServer(w, writerID.String(), log)
	poolRecs := []json.RawMessage{json.RawMessage(`{"kind":"genesis"}`), json.RawMessage(`{"kind":"join"}`)}
	server.Pool = func() ([]json.RawMessage, uint64) { return poolRecs, 42 }
	srv := httptest.NewServer(server)
	defer srv.Close()
	p := NewPeers(DefaultConfig(), r, readerID, httpDialer{srv}, log)
	var relayed atomic.Int32
	p.OnPool = func(ctx context.Context, from peer.ID, recs []json.RawMessage) error {
		if from == writerID && len(recs) == 2 {
			relayed.Add(1)
		}
		return nil
	}
	p.Hint(writerID.String(), "test")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	cursor := func() uint64 { c, _ := r.Cursor(context.Background(), writerID.String()); return c }
	waitUntil(t, 10*time.Second, "catch-up of 1000 records", func() bool { return cursor() == 1000 })
	if !p.Online(writerID.String()) {
		t.Errorf("writer not online while streaming")
	}
	if _, err := w.Append(context.Background(), writerID.String(), "node", "", time.Now(), []byte(`{"live":true}`)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "a live record", func() bool { return cursor() == 1001 })
	waitUntil(t, 5*time.Second, "the membership records, relayed", func() bool { return relayed.Load() > 0 })
	if n := relayed.Load(); n != 1 {
		t.Errorf("membership records relayed %d times; want once (they did not change)", n)
	}
	srv.Listener.Close() // no reconnect can land
	srv.CloseClientConnections()
	waitUntil(t, 5*time.Second, "writer offline", func() bool { return !p.Online(writerID.String()) })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// TestFollowRejectsForeignRecords: a peer may only send its own records.
func TestFollowRejectsForeignRecords(t *testing.T) {
	p := &Peers{db: openDB(t, "r")}
	fr := Frame{Records: []store.Record{{Origin: "someone-else", Seq: 1, Kind: "node", Time: time.Now(), Data: []byte(`{}`)}}}
	if err := p.apply(context.Background(), &follower{id: testID("writer")}, fr); err == nil {
		t.Fatal("a record of another origin was accepted")
	}
}

func TestDecoderBounds(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"heartbeat", "{}\n", false},
		{"record", `{"r":[{"o":"a","s":1,"k":"node","key":"","t":"2026-01-01T00:00:00Z","d":{}}]}` + "\n", false},
		{"seq zero", `{"r":[{"o":"a","s":0,"k":"node","t":"2026-01-01T00:00:00Z","d":{}}]}` + "\n", true},
		{"no kind", `{"r":[{"o":"a","s":1,"k":"","t":"2026-01-01T00:00:00Z","d":{}}]}` + "\n", true},
		{"no origin", `{"r":[{"o":"","s":1,"k":"node","t":"2026-01-01T00:00:00Z","d":{}}]}` + "\n", true},
		{"seq over int64", `{"r":[{"o":"a","s":9223372036854775808,"k":"node","t":"2026-01-01T00:00:00Z","d":{}}]}` + "\n", true},
		// The schema's refusals are the follower's, record by record: the
		// frame decodes.
		{"unknown kind", `{"r":[{"o":"a","s":1,"k":"junk","key":"","t":"2026-01-01T00:00:00Z","d":{}}]}` + "\n", false},
		{"key over cap", `{"r":[{"o":"a","s":1,"k":"alert","key":"` + strings.Repeat("k", 4096) + `","t":"2026-01-01T00:00:00Z","d":{}}]}` + "\n", false},
		{"pool records", `{"p":[{"kind":"join"}]}` + "\n", false},
		{"pool record not json", `{"p":[nope]}` + "\n", true},
		{"not json", "hello\n", true},
		{"truncated", `{"r":[`, true},
		{"too large", `{"x":"` + strings.Repeat("a", MaxFrame) + `"}` + "\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDecoder(strings.NewReader(tt.in)).Next()
			if (err != nil) != tt.wantErr {
				t.Errorf("Next() error = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
	if _, err := NewDecoder(strings.NewReader(`{"x":"` + strings.Repeat("a", MaxFrame) + "\"}\n")).Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized frame: %v, want ErrFrameTooLarge", err)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"r":[{"o":"a","s":1,"k":"node","key":"","t":"2026-01-01T00:00:00Z","d":{}}]}`))
	f.Add([]byte(`{"p":[{"kind":"remove","subject":"X","v":3}]}`))
	// The schema's limits: an unknown kind, a key and data over their caps,
	// a seq past int64, a frame of many records.
	f.Add([]byte(`{"r":[{"o":"a","s":1,"k":"junk","key":"x","t":"2026-01-01T00:00:00Z","d":{}},{"o":"a","s":2,"k":"node","key":"","t":"2026-01-01T00:00:00Z","d":{}}]}`))
	f.Add([]byte(`{"r":[{"o":"a","s":1,"k":"alert","key":"` + strings.Repeat("k", 300) + `","t":"2026-01-01T00:00:00Z","d":{}}]}`))
	f.Add([]byte(`{"r":[{"o":"a","s":1,"k":"alert.rules","key":"","t":"2026-01-01T00:00:00Z","d":"` + strings.Repeat("x", 70<<10) + `"}]}`))
	f.Add([]byte(`{"r":[{"o":"a","s":18446744073709551615,"k":"node","key":"","t":"2026-01-01T00:00:00Z","d":{}}]}`))
	f.Add([]byte(`{"r":[` + strings.Repeat(`{"o":"a","s":1,"k":"node","key":"","t":"2026-01-01T00:00:00Z","d":{}},`, maxBatch) + `{"o":"a","s":2,"k":"node","key":"","t":"2026-01-01T00:00:00Z","d":{}}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := DecodeFrame(line)
		if err != nil {
			return
		}
		for _, r := range fr.Records {
			if r.Seq == 0 || r.Seq > math.MaxInt64 || r.Kind == "" || r.Origin == "" {
				t.Fatalf("accepted a malformed record %+v", r)
			}
		}
		// Whatever decodes also passes through the stream decoder.
		if _, err := NewDecoder(bytes.NewReader(append(bytes.ReplaceAll(line, []byte("\n"), nil), '\n'))).Next(); err != nil && !bytes.Contains(line, []byte("\n")) {
			t.Fatalf("DecodeFrame accepted what Decoder refused: %v", err)
		}
	})
}

// TestFollowSilentPeerGoesOffline: a peer whose stream stays open but sends
// nothing (a hung process) is marked offline after Config.Silence.
func TestFollowSilentPeerGoesOffline(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	writerID, readerID := testID("hung"), testID("reader")
	r := openDB(t, "reader")
	if _, err := r.PutMember(context.Background(), store.MemberRow{ID: writerID.String(), Name: "h", Version: 1, AddedBy: writerID.String()}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // hang without a byte
		case <-release:
		case <-req.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	cfg := DefaultConfig()
	cfg.Silence = 300 * time.Millisecond
	p := NewPeers(cfg, r, readerID, httpDialer{srv}, log)
	var mu sync.Mutex
	var changes []bool
	p.OnChange = func(_ string, online bool) { mu.Lock(); changes = append(changes, online); mu.Unlock() }
	p.Hint(writerID.String(), "test")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitUntil(t, 5*time.Second, "online then offline", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(changes) >= 2 && changes[0] && !changes[1]
	})
}
