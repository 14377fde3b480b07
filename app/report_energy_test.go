package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// The recorder keeps the first sample with counters, the first of each
// quarter hour, and a sample in which a GPU changed hands; GPUs without a
// counter are left out.
func TestEnergyRecorder(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	r := NewEnergyRecorder(db, selfID, slog.New(slog.DiscardHandler))
	base := t0.Truncate(time.Hour)
	sample := func(at time.Time, mj uint64) agent.Sample {
		return agent.Sample{Time: at, GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-0", EnergyMJ: mj}, {Index: 1, UUID: "GPU-1"}}}
	}
	granted := func(at time.Time, mj uint64) agent.Sample {
		s := sample(at, mj)
		s.Holding.HoldGPU("GPU-0", alloc.Holder{Kind: alloc.Job, ID: "job-1"})
		return s
	}
	for _, s := range []agent.Sample{
		sample(base.Add(-time.Minute), 0),     // no counter yet: nothing
		sample(base.Add(time.Second), 100),    // first: kept
		sample(base.Add(2*time.Second), 110),  // same quarter: not
		sample(base.Add(15*time.Minute), 500), // next quarter: kept
		sample(base.Add(16*time.Minute), 600),
		granted(base.Add(17*time.Minute), 700), // GPU 0 granted: kept
		granted(base.Add(18*time.Minute), 800),
		sample(base.Add(19*time.Minute), 900), // released: kept
	} {
		if err := r.Record(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := db.Range(ctx, selfID, KindEnergy, base.Add(-time.Hour), base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got []EnergyReading
	for _, rec := range recs {
		er, err := DecodeEnergy(rec.Time, rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, er)
	}
	var mj []uint64
	for _, er := range got {
		if len(er.GPUs) != 1 || er.GPUs[0].Index != 0 {
			t.Errorf("reading %+v, want GPU 0's only", er)
			continue
		}
		mj = append(mj, er.GPUs[0].MJ)
	}
	if len(mj) != 4 || mj[0] != 100 || mj[1] != 500 || mj[2] != 700 || mj[3] != 900 || !got[0].Time.Equal(base.Add(time.Second)) {
		t.Errorf("readings %+v, want GPU 0 at 100, 500, 700 and 900 mJ", got)
	}

	rctx, cancel := context.WithCancel(ctx)
	samples := make(chan agent.Sample)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx, samples) }()
	samples <- sample(base.Add(30*time.Minute), 900)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

func TestDecodeEnergy(t *testing.T) {
	er := EnergyReading{Time: t0, GPUs: []GPUEnergy{{0, 123}, {7, 1 << 60}}}
	data := EncodeEnergy(er)
	if string(data) != "[[0,123],[7,1152921504606846976]]" {
		t.Errorf("EncodeEnergy = %s", data)
	}
	got, err := DecodeEnergy(t0, data)
	if err != nil || !got.Time.Equal(t0) || len(got.GPUs) != 2 || got.GPUs[1] != (GPUEnergy{7, 1 << 60}) {
		t.Errorf("DecodeEnergy = %+v, %v", got, err)
	}
	if got, err := DecodeEnergy(t0, []byte(" [ [0, 5] ] ")); err != nil || len(got.GPUs) != 1 || got.GPUs[0].MJ != 5 {
		t.Errorf("DecodeEnergy with spaces = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", `[[-1,2]]`, `[[256,1]]`, `[["a",1]]`, `[[0,1],`, `[[0,1]`, `[[0,1]]]`, `[[0,99999999999999999999]]`, `[[0,1],]`} {
		if _, err := DecodeEnergy(t0, []byte(bad)); err == nil {
			t.Errorf("DecodeEnergy(%q) = nil error", bad)
		}
	}
}

// FuzzDecodeEnergy: a peer's energy record never panics the report.
func FuzzDecodeEnergy(f *testing.F) {
	f.Add([]byte("[[0,123],[7,456]]"))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if fast, ok := scanPairs(data, nil); ok {
			var slow [][2]uint64
			if err := json.Unmarshal(data, &slow); err != nil || !slices.Equal(fast, slow) {
				t.Errorf("scanPairs(%q) = %v; JSON reads %v, %v", data, fast, slow, err)
			}
		}
		er, err := DecodeEnergy(t0, data)
		if err == nil {
			for _, g := range er.GPUs {
				if g.Index < 0 || g.Index > 255 {
					t.Errorf("index %d accepted", g.Index)
				}
			}
		}
	})
}
