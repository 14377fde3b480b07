package history

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/labpool/labpool/node/agent"
)

// A tier record's data is a JSON string: the base64 of a fixed binary
// layout (little endian), so it stays JSON for the replicated log and
// decodes without a parser.
//
//	version   uint8  (codecV1)
//	flags     uint8  (flagSingle: every figure is one value, min = mean = max;
//	                  flagExact: every value is a float64)
//	nHost     uint8  host figures stored
//	nGPUM     uint8  figures stored per GPU
//	nGPUs     uint8
//	time      int64  unix seconds of the point
//	n         uint32 1 s samples it stands for
//	host      nHost figures, each (1 or 3) values: min, mean, max
//	per GPU:  index uint8;
//	          single: state uint8 (0 free, 1 busy, 2 idle but granted);
//	          else:   n uint32, busy float16, idle granted float16;
//	          then nGPUM figures, each (1 or 3) values
//
// A value is a float64 in a record with flagExact (a 1 s record: its
// figures are the latest sample's, exactly); elsewhere a float32 for byte
// counts and rates (mem_used_bytes, net_rx_bps, net_tx_bps) and an IEEE
// float16 for the rest (percentages, degrees, watts, MHz: 11 significant
// bits, 0.06 at 100%, 0.5 W at 700 W). Figures past the ones this version
// knows are float32 (float64 with flagExact), and a reader skips them: a
// later version appends figures, never reorders them.
// Records written before this layout are agent.Sample JSON objects (means).
const (
	codecV1    = 1
	flagSingle = 1
	flagExact  = 2
	headerSize = 17
)

var errCodec = errors.New("malformed history record")

// Whether each figure is stored as a float32 (else float16), in the order
// of HostMetrics and GPUMetrics.
var (
	hostWide = [nHostMetrics]bool{hostMemUsed: true, hostRx: true, hostTx: true}
	gpuWide  = [nGPUMetrics]bool{gpuMemUsed: true}
)

// Encode returns the record data of p.
func Encode(p Point) []byte {
	if len(p.GPUs) > 255 {
		p.GPUs = p.GPUs[:255] // no machine has more; the count is a byte
	}
	single := p.N == 1
	k := 3
	if single {
		k = 1
	}
	size := headerSize + nHostMetrics*k*8 + len(p.GPUs)*(9+nGPUMetrics*k*8)
	b := make([]byte, 0, size)
	var flags byte
	if single {
		flags |= flagSingle | flagExact
	}
	b = append(b, codecV1, flags, nHostMetrics, nGPUMetrics, byte(len(p.GPUs)))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Time.Unix()))
	b = binary.LittleEndian.AppendUint32(b, uint32(p.N))
	for i, a := range p.Host {
		b = appendAgg(b, a, single, width(single, hostWide[i]))
	}
	for _, g := range p.GPUs {
		b = append(b, byte(g.Index))
		if single {
			st := byte(stateFree)
			if g.Busy > 0 {
				st = stateBusy
			} else if g.IdleGranted > 0 {
				st = stateIdleGranted
			}
			b = append(b, st)
		} else {
			b = binary.LittleEndian.AppendUint32(b, uint32(g.N))
			b = appendF16(b, g.Busy)
			b = appendF16(b, g.IdleGranted)
		}
		for k, a := range g.M {
			b = appendAgg(b, a, single, width(single, gpuWide[k]))
		}
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(b))+2)
	out[0], out[len(out)-1] = '"', '"'
	base64.StdEncoding.Encode(out[1:], b)
	return out
}

// Widths of a value, in bytes.
const (
	w16, w32, w64 = 2, 4, 8
)

// width is the width of a figure's values: float64 in an exact record,
// else float32 for a wide figure, float16 for the others.
func width(exact, wide bool) int {
	switch {
	case exact:
		return w64
	case wide:
		return w32
	}
	return w16
}

func appendAgg(b []byte, a Agg, single bool, w int) []byte {
	put := appendF16
	switch w {
	case w32:
		put = appendF32
	case w64:
		put = appendF64
	}
	if single {
		return put(b, a.Mean)
	}
	return put(put(put(b, a.Min), a.Mean), a.Max)
}

func appendF64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendF16(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint16(b, toF16(float32(v)))
}

func appendF32(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
}

// DecodePoint reads the data of a record of kind: the binary layout, or
// the agent.Sample JSON of older versions (a mean standing for the tier's
// step of samples).
func DecodePoint(kind string, data []byte) (Point, error) {
	if len(data) > 0 && data[0] == '"' {
		return decodeBinary(data)
	}
	var s agent.Sample
	if err := json.Unmarshal(data, &s); err != nil {
		return Point{}, fmt.Errorf("decode sample: %w", err)
	}
	p := FromSample(s)
	if t, ok := tierOf(kind); ok && t.Step > time.Second {
		n := int(t.Step / time.Second)
		p.N = n
		for i := range p.GPUs {
			p.GPUs[i].N = n
		}
	}
	return p, nil
}

// reader reads the binary layout, remembering the first overrun.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if len(r.b) < n {
		r.bad = true
		r.b = nil
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() byte    { return r.take(1)[0] }
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *reader) f32() float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(r.take(4))))
}

func (r *reader) f16() float64 {
	return float64(fromF16(binary.LittleEndian.Uint16(r.take(2))))
}

func (r *reader) f64() float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(r.take(8)))
}

// agg reads a figure whose values are w bytes wide.
func (r *reader) agg(single bool, w int) Agg {
	get := r.f16
	switch w {
	case w32:
		get = r.f32
	case w64:
		get = r.f64
	}
	if single {
		return one(get())
	}
	return Agg{get(), get(), get()}
}

func decodeBinary(data []byte) (Point, error) {
	if len(data) < 2 || data[len(data)-1] != '"' {
		return Point{}, errCodec
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)-2))
	n, err := base64.StdEncoding.Decode(raw, data[1:len(data)-1])
	if err != nil {
		return Point{}, fmt.Errorf("%w: %v", errCodec, err)
	}
	r := &reader{b: raw[:n]}
	if v := r.u8(); v != codecV1 {
		return Point{}, fmt.Errorf("%w: version %d (a newer labpool wrote it)", errCodec, v)
	}
	flags := r.u8()
	single, exact := flags&flagSingle != 0, flags&flagExact != 0
	nHost, nGPUM, nGPUs := int(r.u8()), int(r.u8()), int(r.u8())
	p := Point{Time: time.Unix(int64(binary.LittleEndian.Uint64(r.take(8))), 0).UTC(), N: int(r.u32())}
	for i := range nHost {
		if i < nHostMetrics {
			p.Host[i] = r.agg(single, width(exact, hostWide[i]))
		} else {
			r.agg(single, width(exact, true))
		}
	}
	p.GPUs = make([]GPUPoint, nGPUs)
	for j := range p.GPUs {
		g := &p.GPUs[j]
		g.Index = int(r.u8())
		if single {
			g.N = 1
			switch r.u8() {
			case stateBusy:
				g.Busy = 1
			case stateIdleGranted:
				g.IdleGranted = 1
			}
		} else {
			g.N, g.Busy, g.IdleGranted = int(r.u32()), r.f16(), r.f16()
		}
		for k := range nGPUM {
			if k < nGPUMetrics {
				g.M[k] = r.agg(single, width(exact, gpuWide[k]))
			} else {
				r.agg(single, width(exact, true))
			}
		}
	}
	if r.bad {
		return Point{}, fmt.Errorf("%w: truncated", errCodec)
	}
	return p, nil
}

// gpuStates reads of a record only what the pool's counts need: the
// point's time, handed to at (which says whether to go on), then for each
// GPU the share of the period it reported in and its busy and
// idle-granted fractions, handed to fn. buf is reused between calls.
func gpuStates(kind string, data []byte, buf *[]byte, at func(time.Time) bool, fn func(share, busy, idle float64)) (time.Time, error) {
	if len(data) == 0 || data[0] != '"' {
		p, err := DecodePoint(kind, data)
		if err != nil || !at(p.Time) {
			return p.Time, err
		}
		for _, g := range p.GPUs {
			fn(share(g.N, p.N), g.Busy, g.IdleGranted)
		}
		return p.Time, nil
	}
	if len(data) < 2 || data[len(data)-1] != '"' {
		return time.Time{}, errCodec
	}
	need := base64.StdEncoding.DecodedLen(len(data) - 2)
	if cap(*buf) < need {
		*buf = make([]byte, need)
	}
	n, err := base64.StdEncoding.Decode((*buf)[:need], data[1:len(data)-1])
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", errCodec, err)
	}
	r := &reader{b: (*buf)[:n]}
	if v := r.u8(); v != codecV1 {
		return time.Time{}, fmt.Errorf("%w: version %d (a newer labpool wrote it)", errCodec, v)
	}
	flags := r.u8()
	single, exact := flags&flagSingle != 0, flags&flagExact != 0
	k := 3
	if single {
		k = 1
	}
	nHost, nGPUM, nGPUs := int(r.u8()), int(r.u8()), int(r.u8())
	tm := time.Unix(int64(binary.LittleEndian.Uint64(r.take(8))), 0).UTC()
	total := int(r.u32())
	if r.bad {
		return time.Time{}, fmt.Errorf("%w: truncated", errCodec)
	}
	if !at(tm) {
		return tm, nil
	}
	for i := range nHost {
		r.take(k * width(exact, i >= nHostMetrics || hostWide[i]))
	}
	for range nGPUs {
		r.u8() // index
		gn, busy, idle := 1, 0.0, 0.0
		if single {
			switch r.u8() {
			case stateBusy:
				busy = 1
			case stateIdleGranted:
				idle = 1
			}
		} else {
			gn, busy, idle = int(r.u32()), r.f16(), r.f16()
		}
		for j := range nGPUM {
			r.take(k * width(exact, j >= nGPUMetrics || gpuWide[j]))
		}
		if r.bad {
			return time.Time{}, fmt.Errorf("%w: truncated", errCodec)
		}
		fn(share(gn, total), busy, idle)
	}
	return tm, nil
}

// share is the part of a point's period a GPU reported in.
func share(gpuN, n int) float64 {
	if n <= 0 {
		return 1
	}
	return min(1, float64(gpuN)/float64(n))
}
