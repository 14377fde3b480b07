// Package replica keeps every member's records in the local store: a node
// serves its own records as a stream ("since N", then live), and follows
// every other member's stream, so a viewer catches up after any outage
// (history included) and learns liveness from the stream itself.
//
// The pool's membership, written by many as signed records (sync/pool),
// travels on the same streams; the follower hands it to a checker and never
// stores it unchecked.
package replica

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/labpool/labpool/sync/store"
)

// StreamPath is the HTTP path of the replication stream.
const StreamPath = "/v1/replica/stream"

// MaxFrame bounds one line of the stream (network input).
const MaxFrame = 8 << 20

// maxBatch bounds the records of one frame.
const maxBatch = 512

// frameBytes bounds the records of one frame by their size: a frame ends
// before the record that would take it past frameBytes (a frame holds one
// record at least, and schema.MaxRecord is far under MaxFrame).
const frameBytes = 1 << 20

// maxPool bounds the membership records of one frame.
const maxPool = 10000

// ErrFrameTooLarge means a peer sent a line over MaxFrame.
var ErrFrameTooLarge = errors.New("replication frame too large")

// Frame is one NDJSON line of the stream. An empty frame is a heartbeat.
type Frame struct {
	Records []store.Record    `json:"r,omitempty"`
	Pool    []json.RawMessage `json:"p,omitempty"` // signed membership records, relayed as received
	// Addrs relays where the members the sender follows said they may be
	// reached (device ID to IP:port): hints, proved only by a handshake.
	Addrs map[string][]string `json:"a,omitempty"`
}

// Decoder reads frames from a stream.
type Decoder struct {
	r *bufio.Reader
}

// NewDecoder returns a decoder of the stream r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next reads the next frame. It fails on a line over MaxFrame, on bad JSON,
// and on a record that breaks the protocol.
func (d *Decoder) Next() (Frame, error) {
	line, err := readLine(d.r, MaxFrame)
	if err != nil {
		return Frame{}, err
	}
	return DecodeFrame(line)
}

// DecodeFrame decodes and checks one line. It fails on what breaks the
// protocol (a record with no origin or kind, a seq of 0 or over
// math.MaxInt64); what breaks the replica's schema (a kind it does not
// know, a key or data over their caps) is for the follower to refuse,
// record by record.
func DecodeFrame(line []byte) (Frame, error) {
	var f Frame
	if err := json.Unmarshal(line, &f); err != nil {
		return Frame{}, fmt.Errorf("decode replication frame: %w", err)
	}
	if len(f.Records) > maxBatch || len(f.Pool) > maxPool || len(f.Addrs) > maxPool {
		return Frame{}, fmt.Errorf("decode replication frame: %d records, %d pool records: over %d or %d", len(f.Records), len(f.Pool), maxBatch, maxPool)
	}
	for _, r := range f.Records {
		if r.Seq == 0 || r.Seq > math.MaxInt64 || r.Kind == "" || r.Origin == "" {
			return Frame{}, fmt.Errorf("decode replication frame: malformed record (seq %d, kind %q)", r.Seq, r.Kind)
		}
	}
	return f, nil
}

// readLine reads one '\n'-terminated line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, ErrFrameTooLarge
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
