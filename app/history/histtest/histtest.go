// Package histtest writes synthetic history into a replica for tests and
// benchmarks: every tier of a node over a span, written directly as tier
// records (no recorder), in the compact format of this version or as the
// agent.Sample JSON of the version before it.
package histtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/sync/store"
)

// Format of the records written.
type Format int

const (
	Compact Format = iota // this version: min, mean and max in the binary layout
	JSON                  // the previous version: agent.Sample JSON (means), no 3 h tier
)

// Node describes the history of one node to write.
type Node struct {
	ID   string
	GPUs int
	// Span is how far back each tier goes from End (capped by the tier's
	// retention): e.g. 30 days, or a year.
	Span time.Duration
	End  time.Time
}

// Sample is the sample of a node with gpus GPUs at tm: figures that vary
// with time, about 3 KB of JSON with 8 GPUs.
func Sample(tm time.Time, gpus int) agent.Sample {
	v := float64(tm.Unix()%3600) / 36 // 0..100 over the hour
	s := agent.Sample{Time: tm, Host: host.Stats{CPUPercent: v, Load1: v / 10, MemUsedBytes: uint64(v * 1e9), MemTotalBytes: 256 << 30,
		NetRxBps: v * 1e6, NetTxBps: v * 5e5,
		Disks: []host.Disk{{Mount: "/", UsedBytes: 1 << 40, TotalBytes: 2 << 40}, {Mount: "/data", UsedBytes: 3 << 40, TotalBytes: 8 << 40}}}}
	for g := range gpus {
		u := math.Mod(v+float64(g)*7, 100)
		s.GPUs = append(s.GPUs, gpu.Stats{Index: g, UUID: fmt.Sprintf("GPU-%08x-1111-2222-3333-444455556666", g), Name: "NVIDIA H100 80GB HBM3",
			UtilPercent: u, MemUtilPercent: u / 2, MemUsedBytes: uint64(u * 8e8), MemTotalBytes: 80 << 30, TempC: 40 + u/3,
			PowerW: 100 + u*6, PowerLimitW: 700, SMClockMHz: 1200 + int(u*7), MemClockMHz: 2619, FanPercent: -1, PState: 0,
			Processes: []gpu.Process{{PID: 1000 + uint32(g), MemBytes: uint64(u * 8e8)}},
			Health:    "ok", Throttle: []string{}})
		s.Holding.HoldGPU(s.GPUs[g].UUID, alloc.Holder{Kind: alloc.Job, ID: "j-1"})
		s.Holding.HoldProc(1000+uint32(g), alloc.Holder{Kind: alloc.Job, ID: "j-1", Member: "m-1"})
	}
	return s
}

// point is the aggregate of a tier's step at tm, built from base (the
// point of a sample): figures that vary with time as Sample's do, spread
// around their mean when the step holds many samples.
func point(base history.Point, tm time.Time, step time.Duration) history.Point {
	v := float64(tm.Unix()%3600) / 36
	p := base
	p.Time = tm
	p.GPUs = append([]history.GPUPoint(nil), base.GPUs...)
	n := max(1, int(step/time.Second))
	p.N = n
	set := func(a *history.Agg, mean float64) {
		*a = history.Agg{Min: mean, Mean: mean, Max: mean}
		if n > 1 {
			a.Min, a.Max = mean*0.8, mean*1.2+1
		}
	}
	set(&p.Host[0], v)
	for i := 1; i < len(p.Host); i++ {
		set(&p.Host[i], p.Host[i].Mean)
	}
	for j := range p.GPUs {
		g := &p.GPUs[j]
		g.N = n
		u := math.Mod(v+float64(j)*7, 100)
		for k := range g.M {
			set(&g.M[k], g.M[k].Mean)
		}
		set(&g.M[0], u)
		set(&g.M[1], u/2)
		set(&g.M[3], 40+u/3)
		set(&g.M[4], 100+u*6)
		if n > 1 {
			g.Busy, g.IdleGranted = 0.6, 0.3
		}
	}
	return p
}

// Records returns the records of n's history in format f, oldest first
// within each tier, with seqs from 1 (as a replica receives them).
func Records(n Node, f Format) ([]store.Record, error) {
	var recs []store.Record
	base := history.FromSample(Sample(n.End, n.GPUs))
	add := func(kind string, tm time.Time, data []byte) {
		recs = append(recs, store.Record{Origin: n.ID, Seq: uint64(len(recs) + 1), Kind: kind, Key: history.Key(tm), Time: tm, Data: data})
	}
	for _, t := range history.Resolutions {
		if f == JSON && t.Kind == history.KindSample3h {
			continue
		}
		span := min(n.Span, t.Keep)
		end := n.End.Truncate(t.Step)
		for tm := end.Add(-span).Truncate(t.Step); tm.Before(end); tm = tm.Add(t.Step) {
			if f == Compact {
				add(t.Kind, tm, history.Encode(point(base, tm, t.Step)))
				continue
			}
			data, err := json.Marshal(Sample(tm, n.GPUs))
			if err != nil {
				return nil, err
			}
			add(t.Kind, tm, data)
		}
	}
	live, err := json.Marshal(Sample(n.End, n.GPUs))
	if err != nil {
		return nil, err
	}
	if f == Compact {
		recs = append(recs, store.Record{Origin: n.ID, Seq: uint64(len(recs) + 1), Kind: history.KindLive, Time: n.End, Data: live})
	}
	return recs, nil
}

// Write stores the history of nodes in db, as replicated records, in one
// transaction.
func Write(ctx context.Context, db *store.DB, f Format, nodes ...Node) error {
	var all []store.Record
	for _, n := range nodes {
		recs, err := Records(n, f)
		if err != nil {
			return err
		}
		all = append(all, recs...)
	}
	return db.Put(ctx, all)
}

// WriteFile creates the replica at path (through store.Open, so its schema
// is current) and bulk-loads the history of nodes into it as replicated
// records, in one transaction with no journal: seconds where Write takes a
// minute for a 16-machine month. It leaves the file in WAL mode, as
// store.Open wants it.
func WriteFile(ctx context.Context, path string, f Format, nodes ...Node) error {
	db, err := store.Open(path)
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode=DELETE", "PRAGMA synchronous=OFF", "PRAGMA cache_size=-16384"} {
		if _, err := raw.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO records (origin, kind, key, seq, time_ms, data) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		recs, err := Records(n, f)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if _, err := ins.ExecContext(ctx, r.Origin, r.Kind, r.Key, int64(r.Seq), r.Time.UnixMilli(), []byte(r.Data)); err != nil {
				return fmt.Errorf("insert %s/%s: %w", r.Kind, r.Key, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO cursors (origin, seq) VALUES (?, ?)`, n.ID, len(recs)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = raw.ExecContext(ctx, "PRAGMA journal_mode=WAL")
	return err
}
