package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
)

// The recorder keeps the first sample with counters, then the first of each
// quarter hour; GPUs without a counter are left out.
func TestEnergyRecorder(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	r := NewEnergyRecorder(db, selfID, slog.New(slog.DiscardHandler))
	base := t0.Truncate(time.Hour)
	sample := func(at time.Time, mj uint64) agent.Sample {
		return agent.Sample{Time: at, GPUs: []gpu.Stats{{Index: 0, EnergyMJ: mj}, {Index: 1}}}
	}
	for _, s := range []agent.Sample{
		sample(base.Add(-time.Minute), 0),     // no counter yet: nothing
		sample(base.Add(time.Second), 100),    // first: kept
		sample(base.Add(2*time.Second), 110),  // same quarter: not
		sample(base.Add(15*time.Minute), 500), // next quarter: kept
		sample(base.Add(16*time.Minute), 600),
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
		var er EnergyReading
		if err := json.Unmarshal(rec.Data, &er); err != nil {
			t.Fatal(err)
		}
		got = append(got, er)
	}
	if len(got) != 2 || !got[0].Time.Equal(base.Add(time.Second)) || !got[1].Time.Equal(base.Add(15*time.Minute)) ||
		len(got[0].GPUs) != 1 || got[0].GPUs[0] != (GPUEnergy{0, 100}) || got[1].GPUs[0] != (GPUEnergy{0, 500}) {
		t.Errorf("readings %+v, want GPU 0 at 100 then 500 mJ", got)
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
