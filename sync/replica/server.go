package replica

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// Server streams this node's own records to followers.
type Server struct {
	db     *store.DB
	origin string
	log    *slog.Logger
	// Heartbeat is the longest silence on a stream, so followers can tell a
	// quiet peer from a dead one.
	Heartbeat time.Duration
	// Pool returns the signed membership records to relay and a
	// fingerprint that changes with them; nil relays none.
	Pool func() ([]json.RawMessage, uint64)
	// Addrs returns the members' addresses to relay (Frame.Addrs) and a
	// fingerprint that changes with them; nil relays none.
	Addrs func() (map[string][]string, uint64)
	// Skip, when set, leaves records out of a catch-up (never out of the
	// live frames): app/history leaves out 1 s samples older than a few
	// minutes, which the follower has as minutes, so a member back from
	// hours away catches up in seconds. The follower's cursor passes them.
	Skip func(store.Record) bool

	// last is the frame last read and encoded for a follower that was up to
	// date: the others, woken by the same append, send it as it is.
	lastMu sync.Mutex
	last   sharedFrame
}

// sharedFrame is the line of the records above from, up to to. It is never
// changed once made, so streams write it without holding lastMu.
type sharedFrame struct {
	from, to uint64
	n        int
	line     []byte
}

// NewServer returns a server of origin's records in db.
func NewServer(db *store.DB, origin string, log *slog.Logger) *Server {
	return &Server{db: db, origin: origin, log: log, Heartbeat: time.Second}
}

// ServeHTTP answers GET StreamPath?since=N with every record of ours whose
// seq is above N, then with new ones as they are written, and with the
// membership records whenever they change, until the follower goes away.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	since, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	if err != nil && r.URL.Query().Get("since") != "" {
		http.Error(w, "since must be a sequence number", http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	changed, cancel := s.db.SubscribeLocal() // our records and the pool's
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	err = s.stream(r.Context(), w, flusher, since, changed)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.log.Debug("replication stream ended", "err", err)
	}
}

func (s *Server) stream(ctx context.Context, w http.ResponseWriter, fl http.Flusher, since uint64, changed <-chan struct{}) error {
	enc := json.NewEncoder(w)
	// The heartbeat fires after Heartbeat without a frame: records flowing
	// every second need none.
	beat := time.NewTimer(s.Heartbeat)
	defer beat.Stop()
	var (
		poolSum, addrSum uint64
		buf              []byte // the last frame's line, reused
	)
	dirty := true // read the store at start and after each change only
	for {
		if dirty {
			n, more, err := s.sendSince(ctx, w, &buf, &since)
			if err != nil {
				return err
			}
			if poolSum, err = s.sendPool(enc, poolSum); err != nil {
				return err
			}
			if addrSum, err = s.sendAddrs(enc, addrSum); err != nil {
				return err
			}
			fl.Flush()
			if n > 0 {
				beat.Reset(s.Heartbeat)
			}
			if more {
				continue // more to catch up
			}
			dirty = false
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			dirty = true
		case <-beat.C:
			// A quiet second: a heartbeat, with no query, tells the
			// follower we are alive (or the members' new addresses do).
			sum, err := s.sendAddrs(enc, addrSum)
			if err != nil {
				return err
			}
			if sum == addrSum {
				if _, err := w.Write(heartbeat); err != nil {
					return err
				}
			}
			addrSum = sum
			fl.Flush()
			beat.Reset(s.Heartbeat)
		}
	}
}

// sendSince sends our records above *since, in a frame encoded into *buf,
// and says whether more are waiting. A frame holds at most maxBatch
// records and ends before the one that would take it past frameBytes; the
// store is read up to that budget only (finding 15: a catch-up of large
// records read 32 MiB to send 1 MiB). The
// store is not read when it says we appended nothing since (the change
// that woke the stream was another origin's).
func (s *Server) sendSince(ctx context.Context, w io.Writer, buf *[]byte, since *uint64) (n int, more bool, err error) {
	top, known := s.db.Appended(s.origin)
	if known && top <= *since {
		return 0, false, nil
	}
	if known {
		s.lastMu.Lock()
		f := s.last
		s.lastMu.Unlock()
		if f.from == *since && f.to == top && f.line != nil {
			*since = f.to
			_, err := w.Write(f.line)
			return f.n, false, err
		}
	}
	from := *since
	recs, full, err := s.db.SinceBytes(ctx, s.origin, from, maxBatch, frameBytes)
	if err != nil || len(recs) == 0 {
		return 0, false, err
	}
	last := recs[len(recs)-1].Seq
	more = full || len(recs) == maxBatch
	live := known && last == top && !more && len(recs) <= 16
	if s.Skip != nil && !live {
		recs = slices.DeleteFunc(recs, s.Skip)
	}
	// A record over its kind's caps (written before the caps were) is
	// left out: every follower would refuse it.
	recs = slices.DeleteFunc(recs, overCap)
	if len(recs) == 0 {
		*since = last
		return 0, more, nil
	}
	var line []byte
	if !live {
		line = (*buf)[:0]
	}
	line, used := appendFrameUpTo(line, recs, frameBytes)
	if used < len(recs) {
		last, more, live = recs[used-1].Seq, true, false
	}
	*since = last
	if live {
		// Live records, as every follower that is up to date will want.
		s.lastMu.Lock()
		s.last = sharedFrame{from: from, to: top, n: used, line: line}
		s.lastMu.Unlock()
	} else {
		*buf = line
		if cap(*buf) > 1<<20 {
			defer func() { *buf = nil }() // a catch-up's large frame is not kept
		}
	}
	_, err = w.Write(line)
	return used, more, err
}

// overCap says whether the schema refuses r.
func overCap(r store.Record) bool { return schema.Check(r.Kind, r.Key, len(r.Data)) != nil }

// sendPool sends the membership records when they differ from what was
// last sent (fingerprint last).
func (s *Server) sendPool(enc *json.Encoder, last uint64) (uint64, error) {
	if s.Pool == nil {
		return last, nil
	}
	recs, sum := s.Pool()
	if sum == last || len(recs) == 0 {
		return sum, nil
	}
	if len(recs) > maxPool {
		recs = recs[len(recs)-maxPool:]
	}
	return sum, enc.Encode(Frame{Pool: recs})
}

// sendAddrs relays the members' addresses when they differ from what was
// last sent (fingerprint last). It runs when the stream wakes for another
// reason (a record, the heartbeat), never on a timer of its own.
func (s *Server) sendAddrs(enc *json.Encoder, last uint64) (uint64, error) {
	if s.Addrs == nil {
		return last, nil
	}
	addrs, sum := s.Addrs()
	if sum == last || len(addrs) == 0 {
		return sum, nil
	}
	return sum, enc.Encode(Frame{Addrs: addrs})
}
