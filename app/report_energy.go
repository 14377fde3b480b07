package app

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// KindEnergy is a node's readings of its GPUs' energy counters (key: unix
// seconds; time: the reading's; data: EncodeEnergy's), written by the node
// itself: what the report's energy comes from. A history kind ("sample."
// prefix): a full disk skips it before any control record.
const KindEnergy = schema.KindEnergy

// Energy readings: one per energyStep, kept energyKeep.
const (
	energyStep = 15 * time.Minute
	energyKeep = history.MaxSeriesWindow
)

// EnergyReading is the energy counters of a node's GPUs at one time.
type EnergyReading struct {
	Time time.Time
	GPUs []GPUEnergy
}

// GPUEnergy is one GPU's counter: millijoules since its driver loaded.
type GPUEnergy struct {
	Index int
	MJ    uint64
}

// EncodeEnergy returns the record data of er: a JSON array of [index, mJ]
// pairs (its time is the record's).
func EncodeEnergy(er EnergyReading) []byte {
	pairs := make([][2]uint64, len(er.GPUs))
	for i, g := range er.GPUs {
		pairs[i] = [2]uint64{uint64(g.Index), g.MJ}
	}
	data, _ := json.Marshal(pairs) // cannot fail
	return data
}

// DecodeEnergy reads a record of KindEnergy made at t.
func DecodeEnergy(t time.Time, data []byte) (EnergyReading, error) {
	pairs, err := energyPairs(data, nil)
	if err != nil {
		return EnergyReading{}, err
	}
	er := EnergyReading{Time: t, GPUs: make([]GPUEnergy, 0, len(pairs))}
	for _, p := range pairs {
		er.GPUs = append(er.GPUs, GPUEnergy{Index: int(p[0]), MJ: p[1]})
	}
	return er, nil
}

// energyPairs reads the [index, mJ] pairs of a KindEnergy record into buf
// (reused).
func energyPairs(data []byte, buf [][2]uint64) ([][2]uint64, error) {
	pairs, ok := scanPairs(data, buf[:0])
	if !ok { // not as EncodeEnergy writes it: JSON may still read it
		pairs = buf[:0]
		if err := json.Unmarshal(data, &pairs); err != nil {
			return buf, fmt.Errorf("decode energy reading: %w", err)
		}
	}
	for _, p := range pairs {
		if p[0] > 255 {
			return pairs, fmt.Errorf("decode energy reading: GPU index %d", p[0])
		}
	}
	return pairs, nil
}

// EnergyRecorder writes this machine's energy counters into the replica:
// the first sample that has them, the first of each quarter hour, and each
// sample in which a GPU changed hands (a job got or released it), so that a
// job's energy is the counters' difference over its own time.
type EnergyRecorder struct {
	db      *store.DB
	origin  string
	log     *slog.Logger
	last    time.Time // of the last reading written
	holders string    // the jobs holding each GPU in the last sample
}

// NewEnergyRecorder returns a recorder writing as origin.
func NewEnergyRecorder(db *store.DB, origin string, log *slog.Logger) *EnergyRecorder {
	return &EnergyRecorder{db: db, origin: origin, log: log}
}

// Run records the samples until ctx is cancelled or samples is closed,
// pruning readings older than their retention once an hour. It starts no
// goroutine.
func (r *EnergyRecorder) Run(ctx context.Context, samples <-chan agent.Sample) error {
	agent.Consume(ctx, samples, time.Hour, func(s agent.Sample) {
		if err := r.Record(ctx, s); err != nil {
			r.log.Warn("record energy counters", "err", err)
		}
	}, func(now time.Time) {
		if _, err := r.db.Prune(ctx, KindEnergy, now.Add(-energyKeep)); err != nil {
			r.log.Warn("prune energy readings", "err", err)
		}
	})
	return nil
}

// Record writes s's counters if s is the first sample of its quarter hour,
// or a GPU changed hands since the last sample.
func (r *EnergyRecorder) Record(ctx context.Context, s agent.Sample) error {
	holders := holdersOf(s)
	moved := holders != r.holders
	r.holders = holders
	if !moved && !r.last.IsZero() && s.Time.Truncate(energyStep).Equal(r.last.Truncate(energyStep)) {
		return nil
	}
	er := EnergyReading{Time: s.Time}
	for _, g := range s.GPUs {
		if g.EnergyMJ > 0 {
			er.GPUs = append(er.GPUs, GPUEnergy{Index: g.Index, MJ: g.EnergyMJ})
		}
	}
	if len(er.GPUs) == 0 {
		return nil // no counter here (or not yet): nothing to keep
	}
	r.last = s.Time // a reading that fails to be written waits for the next quarter
	_, err := r.db.Append(ctx, r.origin, KindEnergy, history.Key(s.Time), s.Time, EncodeEnergy(er))
	return err
}

// holdersOf says which job holds each GPU of s (a Slurm job too).
func holdersOf(s agent.Sample) string {
	var b strings.Builder
	for _, g := range s.GPUs {
		h := s.Holding.GPU(g.UUID)
		fmt.Fprintf(&b, "%d=%s/%s;", g.Index, h.JobID(), h.Scheduler())
	}
	return b.String()
}

// scanPairs reads EncodeEnergy's text, [[1,2],[3,4]], with no space,
// appending to pairs; ok false for anything else (a report reads thousands
// of these).
func scanPairs(b []byte, pairs [][2]uint64) (_ [][2]uint64, ok bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return pairs, false
	}
	b = b[1 : len(b)-1]
	for n0 := len(pairs); len(b) > 0; {
		if len(pairs) > n0 {
			if b[0] != ',' {
				return pairs, false
			}
			b = b[1:]
		}
		var p [2]uint64
		if len(b) == 0 || b[0] != '[' {
			return pairs, false
		}
		b = b[1:]
		for k := range p {
			n := 0
			for n < len(b) && b[n] >= '0' && b[n] <= '9' {
				n++
			}
			v, err := strconv.ParseUint(string(b[:n]), 10, 64)
			// JSON has no leading zero: "00" or "07" is left to it (to refuse).
			if n == 0 || (n > 1 && b[0] == '0') || err != nil || len(b) == n || b[n] != ",]"[k] {
				return pairs, false
			}
			p[k], b = v, b[n+1:]
		}
		pairs = append(pairs, p)
	}
	return pairs, true
}
