// Package histtest writes synthetic history into a replica for tests and
// benchmarks: every tier of a node over a span, written directly as tier
// records (no recorder), in the compact format of this version or as the
// agent.Sample JSON of the version before it.
package histtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
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
			Processes: []gpu.Process{{PID: 1000 + uint32(g), MemBytes: uint64(u * 8e8), Job: "j-1", Owner: "m-1"}}, Job: "j-1",
			Health: "ok", Throttle: []string{}})
	}
	return s
}

// point is the aggregate of a tier's step at tm: the sample's figures as
// the mean, with a spread around them.
func point(tm time.Time, gpus int, step time.Duration) history.Point {
	p := history.FromSample(Sample(tm, gpus))
	p.Time = tm
	n := int(step / time.Second)
	if n <= 1 {
		return p
	}
	p.N = n
	spread := func(a *history.Agg) { a.Min, a.Max = a.Mean*0.8, a.Mean*1.2+1 }
	for i := range p.Host {
		spread(&p.Host[i])
	}
	for j := range p.GPUs {
		p.GPUs[j].N = n
		for k := range p.GPUs[j].M {
			spread(&p.GPUs[j].M[k])
		}
		p.GPUs[j].Busy, p.GPUs[j].IdleGranted = 0.6, 0.3
	}
	return p
}

// Records returns the records of n's history in format f, oldest first
// within each tier, with seqs from 1 (as a replica receives them).
func Records(n Node, f Format) ([]store.Record, error) {
	var recs []store.Record
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
				add(t.Kind, tm, history.Encode(point(tm, n.GPUs, t.Step)))
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
