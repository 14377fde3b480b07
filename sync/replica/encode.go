package replica

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labpool/labpool/sync/store"
)

// heartbeat is the empty frame, encoded.
var heartbeat = []byte("{}\n")

// appendRecordsFrame appends the NDJSON line of a frame of recs, as
// encoding/json would write Frame{Records: recs}, without its reflection
// and without re-scanning each record's data: the store holds data that is
// valid JSON (Append and Put check it), so it is copied as it is, unless it
// holds a line break, which a line cannot carry; then it is compacted.
func appendRecordsFrame(b []byte, recs []store.Record) []byte {
	b, _ = appendFrameUpTo(b, recs, 0)
	return b
}

// appendFrameUpTo is appendRecordsFrame of the first records of recs that
// fit in max bytes (all of them when max is 0), one at least; it returns
// how many it took.
func appendFrameUpTo(b []byte, recs []store.Record, max int) ([]byte, int) {
	start := len(b)
	b = append(b, `{"r":[`...)
	for i, r := range recs {
		if i > 0 {
			if max > 0 && len(b)-start+len(r.Key)+len(r.Data)+len(r.Origin)+len(r.Kind)+recordOverhead > max {
				return append(b, "]}\n"...), i
			}
			b = append(b, ',')
		}
		b = append(b, `{"o":`...)
		b = appendString(b, r.Origin)
		b = append(b, `,"s":`...)
		b = strconv.AppendUint(b, r.Seq, 10)
		b = append(b, `,"k":`...)
		b = appendString(b, r.Kind)
		b = append(b, `,"key":`...)
		b = appendString(b, r.Key)
		b = append(b, `,"t":"`...)
		b = r.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","d":`...)
		b = appendData(b, r.Data)
		b = append(b, '}')
	}
	return append(b, "]}\n"...), len(recs)
}

// recordOverhead bounds what a record's line adds to its origin, kind, key
// and data: the field names, its seq and time, and the frame's end
// (escapes in a key aside).
const recordOverhead = 96

// appendData appends a record's data: null when empty, else its JSON.
func appendData(b []byte, d json.RawMessage) []byte {
	if len(d) == 0 {
		return append(b, "null"...)
	}
	if bytes.IndexByte(d, '\n') < 0 && bytes.IndexByte(d, '\r') < 0 {
		return append(b, d...)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, d); err != nil {
		return append(b, "null"...) // not JSON: the store refuses such data
	}
	return append(b, buf.Bytes()...)
}

// appendString appends s as a JSON string. Valid UTF-8 is copied with the
// characters JSON requires escaped; anything else goes through
// encoding/json, which replaces invalid bytes as a decoder expects.
func appendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		q, _ := json.Marshal(s)
		return append(b, q...)
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
