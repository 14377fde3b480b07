package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// TestAppendRecordsFrame wants the hand-written frame to decode to what
// encoding/json's encoding of the same frame decodes to, for awkward
// strings and data too.
func TestAppendRecordsFrame(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)
	recs := []store.Record{
		{Origin: "A", Seq: 1, Kind: "node", Key: "", Time: t0, Data: json.RawMessage(`{"a":1}`)},
		{Origin: "A", Seq: 2, Kind: "sample.1s", Key: "001795168680", Time: t0.Add(time.Second), Data: json.RawMessage(`{"gpus":[{"u":99.5}],"s":"<&>"}`)},
		{Origin: "A", Seq: 3, Kind: "job", Key: "quote\" back\\ nl\n tab\t ctl\x01 del\x7f é 世 \u2028", Time: t0, Data: nil},
		{Origin: "A", Seq: 4, Kind: "job", Key: "bad\xffutf8", Time: t0, Data: json.RawMessage("{\n  \"indented\": [1,\r\n 2]\n}")},
		{Origin: "A", Seq: 1<<63 - 1, Kind: "k", Key: "k", Time: time.Unix(0, 0).UTC(), Data: json.RawMessage(`"just a string"`)},
	}
	got := appendRecordsFrame(nil, recs)
	if bytes.Count(got, []byte("\n")) != 1 || got[len(got)-1] != '\n' {
		t.Fatalf("frame is not one line: %q", got)
	}
	want, err := json.Marshal(Frame{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	gf, err := DecodeFrame(got)
	if err != nil {
		t.Fatalf("DecodeFrame(our frame %s) = %v", got, err)
	}
	wf, err := DecodeFrame(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(gf.Records) != len(wf.Records) {
		t.Fatalf("%d records; want %d", len(gf.Records), len(wf.Records))
	}
	for i := range gf.Records {
		g, w := gf.Records[i], wf.Records[i]
		if !jsonEqual(t, g.Data, w.Data) {
			t.Errorf("record %d data = %s; want %s", i, g.Data, w.Data)
		}
		g.Data, w.Data = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("record %d = %+v; want %+v", i, g, w)
		}
	}
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// FuzzAppendRecordsFrame: any record the store would hold encodes to one
// line that decodes back to it.
func FuzzAppendRecordsFrame(f *testing.F) {
	f.Add("A", "job", "key", []byte(`{"x":"y"}`), int64(1700000000123))
	f.Add("A\"", "k\n", "\xff", []byte("[1,\n2]"), int64(-1))
	f.Fuzz(func(t *testing.T, origin, kind, key string, data []byte, ms int64) {
		if !json.Valid(data) || kind == "" || len(kind) > 64 || len(key) > 256 {
			return
		}
		tm := time.UnixMilli(ms).UTC()
		if tm.Year() < 0 || tm.Year() > 9999 { // JSON times have four-digit years
			return
		}
		r := store.Record{Origin: origin, Seq: 7, Kind: kind, Key: key, Time: tm, Data: data}
		line := appendRecordsFrame(nil, []store.Record{r})
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("frame is not one line: %q", line)
		}
		want, _ := json.Marshal(Frame{Records: []store.Record{r}})
		gf, err := DecodeFrame(line)
		wf, werr := DecodeFrame(want)
		if werr != nil {
			// encoding/json's own frame of the record is refused (a
			// record the decoder judges malformed): ours is too.
			if err == nil {
				t.Fatalf("DecodeFrame(%q) accepts the record whose encoding/json frame it refuses: %v", line, werr)
			}
			return
		}
		if err != nil {
			t.Fatalf("DecodeFrame(%q) = %v", line, err)
		}
		g, w := gf.Records[0], wf.Records[0]
		if !jsonEqual(t, g.Data, w.Data) {
			t.Fatalf("data %s; want %s", g.Data, w.Data)
		}
		g.Data, w.Data = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("record %+v; want %+v", g, w)
		}
	})
}

// TestStreamsShareLiveFrames runs three streams of one server, appends
// records one by one and in a batch, and wants every stream to receive every
// record once, in order, whether it read the store or took the frame
// another stream encoded.
func TestStreamsShareLiveFrames(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	server := NewServer(db, "W", slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(server)
	defer srv.Close()
	if _, err := db.Append(ctx, "W", "node", "", time.Now(), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	const n = 1 + 30 + 5 + 10 // the node record, samples one by one, a batch, more
	var wg sync.WaitGroup
	got := make([][]uint64, 3)
	for i := range got {
		resp, err := srv.Client().Get(srv.URL + StreamPath + "?since=0")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		wg.Go(func() {
			dec := NewDecoder(resp.Body)
			for len(got[i]) < n {
				fr, err := dec.Next()
				if err != nil {
					t.Errorf("stream %d: %v", i, err)
					return
				}
				for _, r := range fr.Records {
					got[i] = append(got[i], r.Seq)
				}
			}
		})
	}
	one := func(k int) {
		if _, err := db.Append(ctx, "W", "sample.1s", fmt.Sprint(k), time.Now(), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for k := range 30 {
		one(k)
	}
	batch := make([]store.Record, 5)
	for j := range batch {
		batch[j] = store.Record{Kind: "sample.1s", Key: fmt.Sprint("b", j), Time: time.Now(), Data: []byte(`{}`)}
	}
	if _, err := db.AppendBatch(ctx, "W", batch); err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		one(100 + k)
	}
	wg.Wait()
	for i, seqs := range got {
		if len(seqs) != n {
			t.Fatalf("stream %d got %d records; want %d", i, len(seqs), n)
		}
		for j, s := range seqs {
			if s != uint64(j+1) {
				t.Fatalf("stream %d got seqs %v; want 1..%d once each, in order", i, seqs, n)
			}
		}
	}
}
