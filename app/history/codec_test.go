package history

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// f16Approx compares figures to a float16's precision.
var f16Approx = cmpopts.EquateApprox(1.0/1024, 1e-6)

func testPoint(n int) Point {
	p := Point{Time: at(12, 15, 0), N: n}
	for i := range p.Host {
		p.Host[i] = Agg{float64(i), float64(i) + 0.5, float64(i) + 1}
	}
	for j := range 3 {
		g := GPUPoint{Index: j * 2, N: n, Busy: 0.25, IdleGranted: 0.5}
		for k := range g.M {
			g.M[k] = Agg{float64(k), float64(k) + 1.25, float64(k*1000) + 2}
		}
		g.M[gpuMemUsed] = Agg{1 << 30, 40 << 30, 80 << 30}
		p.GPUs = append(p.GPUs, g)
	}
	if n == 1 {
		for i := range p.Host {
			p.Host[i] = one(p.Host[i].Mean)
		}
		for j := range p.GPUs {
			g := &p.GPUs[j]
			for k := range g.M {
				g.M[k] = one(g.M[k].Mean)
			}
			g.Busy, g.IdleGranted = float64(j%2), 0
		}
	}
	return p
}

func TestCodecRoundTrip(t *testing.T) {
	for _, n := range []int{1, 900} {
		p := testPoint(n)
		data := Encode(p)
		if !json.Valid(data) {
			t.Fatalf("N=%d: record data is not JSON: %s", n, data)
		}
		got, err := DecodePoint(KindSample15m, data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, got, f16Approx); diff != "" {
			t.Errorf("N=%d round trip (-want +got):\n%s", n, diff)
		}
	}
}

func TestCodecSizes(t *testing.T) {
	// 8 GPUs: the size that makes a machine-year fit
	p := testPoint(900)
	for len(p.GPUs) < 8 {
		p.GPUs = append(p.GPUs, p.GPUs[0])
	}
	if n := len(Encode(p)); n > 700 {
		t.Errorf("a 15 min point of 8 GPUs takes %d bytes, want at most 700", n)
	}
	one := testPoint(1)
	for len(one.GPUs) < 8 {
		one.GPUs = append(one.GPUs, one.GPUs[0])
	}
	if n := len(Encode(one)); n > 700 {
		t.Errorf("a 1 s point of 8 GPUs takes %d bytes, want at most 700", n)
	}
	// a 1 s record's figures are exact: the latest sample's
	one.GPUs[0].M[gpuMemClock] = Agg{2619, 2619, 2619}
	one.GPUs[0].M[gpuPower] = Agg{123.456, 123.456, 123.456}
	one.GPUs[0].M[gpuMemUsed] = Agg{21474836481, 21474836481, 21474836481}
	got, err := DecodePoint(KindSample1s, Encode(one))
	if err != nil || got.GPUs[0].M != one.GPUs[0].M {
		t.Errorf("1 s figures %+v, %v; want exactly %+v", got.GPUs[0].M, err, one.GPUs[0].M)
	}
}

// TestCodecNewer: a record of a later writer with more figures per host and
// GPU reads with the figures this version knows.
func TestCodecNewer(t *testing.T) {
	p := testPoint(1)
	// as a later version would write it: one more host and GPU figure each
	b := []byte{codecV1, flagSingle | flagExact, nHostMetrics + 1, nGPUMetrics + 1, byte(len(p.GPUs))}
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Time.Unix()))
	b = binary.LittleEndian.AppendUint32(b, 1)
	for i, a := range p.Host {
		b = appendAgg(b, a, true, width(true, hostWide[i]))
	}
	b = appendF64(b, 99)
	for _, g := range p.GPUs {
		b = append(b, byte(g.Index), byte(g.Busy))
		for k, a := range g.M {
			b = appendAgg(b, a, true, width(true, gpuWide[k]))
		}
		b = appendF64(b, 99)
	}
	data := []byte(`"` + base64.StdEncoding.EncodeToString(b) + `"`)
	got, err := DecodePoint(KindSample1s, data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got, f16Approx); diff != "" {
		t.Errorf("newer record (-want +got):\n%s", diff)
	}
}

func TestCodecMalformed(t *testing.T) {
	good := Encode(testPoint(900))
	for name, data := range map[string][]byte{
		"truncated":    append(append([]byte(`"`), good[1:len(good)/2-1]...), '"'),
		"not base64":   []byte(`"!!!!"`),
		"newer layout": []byte(`"` + base64.StdEncoding.EncodeToString([]byte{2, 0, 0, 0, 0}) + `"`),
		"empty":        []byte(`""`),
		"unquoted":     good[:len(good)-1],
	} {
		if _, err := DecodePoint(KindSample1m, data); !errors.Is(err, errCodec) {
			t.Errorf("%s: err = %v, want errCodec", name, err)
		}
	}
	if _, err := DecodePoint(KindSample1m, []byte(`{"time":"yesterday"}`)); err == nil {
		t.Error("a malformed old record decoded")
	}
}

func FuzzDecodePoint(f *testing.F) {
	f.Add(Encode(testPoint(1)))
	f.Add(Encode(testPoint(900)))
	f.Add([]byte(`{"time":"2026-03-01T12:00:00Z","gpus":[{"index":1}]}`))
	var buf []byte
	f.Fuzz(func(t *testing.T, data []byte) {
		// the pool's reader of the same records neither panics nor reads
		// a GPU more than the record holds
		gpus := 0
		gpuStates(KindSample1m, data, &buf, func(time.Time) bool { return true }, func(_, _, _ float64) { gpus++ })
		p, err := DecodePoint(KindSample1m, data)
		if err == nil && gpus != len(p.GPUs) {
			t.Fatalf("the pool's reader saw %d GPUs, DecodePoint %d", gpus, len(p.GPUs))
		}
		if err != nil {
			return
		}
		// what decodes re-encodes and decodes again to as many GPUs
		again, err := DecodePoint(KindSample1m, Encode(p))
		if err != nil || len(again.GPUs) != len(p.GPUs) {
			t.Fatalf("re-encoded point: %d GPUs, %v; want %d", len(again.GPUs), err, len(p.GPUs))
		}
	})
}

func TestFloat16(t *testing.T) {
	for _, tt := range []struct{ in, want float32 }{
		{0, 0}, {1, 1}, {-2.5, -2.5}, {100, 100}, {99.97, 100}, {700.3, 700.5}, {2619, 2620}, {1e6, maxF16},
		{-1e6, -maxF16}, {1e-9, 0}, {6e-5, 6.0021877e-05}, {0.3, 0.30004883},
	} {
		if got := fromF16(toF16(tt.in)); got != tt.want {
			t.Errorf("float16 of %v reads %v, want %v", tt.in, got, tt.want)
		}
	}
	for h := range uint16(0x7c00) { // every finite positive float16 survives a round trip
		if got := toF16(fromF16(h)); got != h {
			t.Fatalf("float16 %#x -> %v -> %#x", h, fromF16(h), got)
		}
	}
	if v := fromF16(toF16(float32(math.NaN()))); v == v {
		t.Errorf("NaN reads %v", v)
	}
}
