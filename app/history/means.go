package history

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

// GPUMeans is one GPU of a tier point as a report reads it: the samples it
// reported in, and the means of the figures asked for.
type GPUMeans struct {
	Index  int
	N      int
	Mean   [2]float64
	Lo, Hi float64 // the least and the greatest of the first figure
}

// EachMeans calls fn with each point of node's tier t whose time is in
// [from, to), oldest first: its time, the samples it stands for, and per GPU
// the means of GPUMetrics[a] and GPUMetrics[b], and the range of a. It
// reads only those of a record; gpus is reused between calls. Malformed records are skipped.
func (s *Store) EachMeans(ctx context.Context, node string, t Resolution, from, to time.Time, a, b int,
	fn func(tm time.Time, n int, gpus []GPUMeans)) error {
	var buf []byte
	var gpus []GPUMeans
	return s.db.Each(ctx, node, t.Kind, from, to, func(_ time.Time, data []byte) error {
		tm, n, gs, err := decodeMeans(t.Kind, data, &buf, gpus[:0], a, b)
		if err == nil {
			gpus = gs
			fn(tm, n, gs)
		}
		return nil
	})
}

// decodeMeans reads a record's time, sample count and per GPU the means of
// figures a and b, appending the GPUs to out; buf is reused.
func decodeMeans(kind string, data []byte, buf *[]byte, out []GPUMeans, a, b int) (time.Time, int, []GPUMeans, error) {
	if len(data) == 0 || data[0] != '"' {
		p, err := DecodePoint(kind, data)
		if err != nil {
			return time.Time{}, 0, out, err
		}
		for _, g := range p.GPUs {
			out = append(out, GPUMeans{Index: g.Index, N: g.N, Mean: [2]float64{g.M[a].Mean, g.M[b].Mean},
				Lo: g.M[a].Min, Hi: g.M[a].Max})
		}
		return p.Time, p.N, out, nil
	}
	if len(data) < 2 || data[len(data)-1] != '"' {
		return time.Time{}, 0, out, errCodec
	}
	need := base64.StdEncoding.DecodedLen(len(data) - 2)
	if cap(*buf) < need {
		*buf = make([]byte, need)
	}
	n, err := base64.StdEncoding.Decode((*buf)[:need], data[1:len(data)-1])
	if err != nil {
		return time.Time{}, 0, out, fmt.Errorf("%w: %v", errCodec, err)
	}
	r := &reader{b: (*buf)[:n]}
	if v := r.u8(); v != codecV1 {
		return time.Time{}, 0, out, fmt.Errorf("%w: version %d (a newer labpool wrote it)", errCodec, v)
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
	for i := range nHost {
		r.take(k * width(exact, i >= nHostMetrics || hostWide[i]))
	}
	for range nGPUs {
		g := GPUMeans{Index: int(r.u8()), N: 1}
		if single {
			r.u8() // state
		} else {
			g.N = int(r.u32())
			r.take(4) // busy, idle-granted
		}
		for j := range nGPUM {
			w := width(exact, j >= nGPUMetrics || gpuWide[j])
			if j != a && j != b {
				r.take(k * w)
				continue
			}
			v := r.agg(single, w)
			if j == a {
				g.Mean[0], g.Lo, g.Hi = v.Mean, v.Min, v.Max
			}
			if j == b {
				g.Mean[1] = v.Mean
			}
		}
		out = append(out, g)
	}
	if r.bad {
		return time.Time{}, 0, out[:0], fmt.Errorf("%w: truncated", errCodec)
	}
	return tm, total, out, nil
}
