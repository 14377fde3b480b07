package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/sync/store"
)

// benchNodes and benchSeconds size the replica a viewer opens: 20 nodes with
// an hour of 1 s samples each.
const (
	benchNodes   = 20
	benchSeconds = 3600
)

// writeBenchReplica creates, at path, the replica of node 0 holding node
// records, members and benchSeconds samples of every node.
func writeBenchReplica(b *testing.B, path string) string {
	ctx := context.Background()
	db, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	end := time.Now().Truncate(time.Second)
	var self string
	for i := range benchNodes {
		id := fmt.Sprintf("N%03d-AAAA-BBBB-CCCC", i)
		if i == 0 {
			self = id
		}
		if _, err := db.PutMember(ctx, store.MemberRow{ID: id, Name: fmt.Sprintf("node-%02d", i), Version: 1, AddedAt: end, AddedBy: self}); err != nil {
			b.Fatal(err)
		}
		recs := make([]store.Record, 0, benchSeconds+1)
		nr := app.NodeRecord{Info: agent.Info{ID: id, Name: fmt.Sprintf("node-%02d", i), Host: host.Info{Hostname: id, Cores: 64}},
			Addresses: []string{fmt.Sprintf("10.0.0.%d:7420", i+1)}}
		recs = append(recs, store.Record{Kind: app.KindNode, Time: end, Data: mustMarshal(b, nr)})
		for s := range benchSeconds {
			tm := end.Add(-time.Duration(benchSeconds-s) * time.Second)
			recs = append(recs, store.Record{Kind: history.KindSample1s, Key: fmt.Sprintf("%012d", tm.Unix()), Time: tm, Data: mustMarshal(b, benchSample(tm, s))})
		}
		if i == 0 {
			_, err = db.AppendBatch(ctx, id, recs)
		} else {
			for j := range recs {
				recs[j].Origin, recs[j].Seq = id, uint64(j+1)
			}
			err = db.Put(ctx, recs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.SetSetting(ctx, app.SettingSelfID, self); err != nil {
		b.Fatal(err)
	}
	return self
}

// benchSample is a sample of a host with 4 GPUs, about 1.5 KB of JSON.
func benchSample(tm time.Time, v int) agent.Sample {
	s := agent.Sample{Time: tm, Host: host.Stats{CPUPercent: float64(v % 100), MemUsedBytes: 1 << 34, MemTotalBytes: 1 << 36,
		Disks: []host.Disk{{Mount: "/", UsedBytes: 1 << 40, TotalBytes: 1 << 41}, {Mount: "/data", UsedBytes: 1 << 42, TotalBytes: 1 << 43}}}}
	for g := range 4 {
		s.GPUs = append(s.GPUs, gpu.Stats{Index: g, UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", g), Name: "NVIDIA H100 80GB HBM3",
			UtilPercent: float64(v % 100), MemUsedBytes: 1 << 33, MemTotalBytes: 80 << 30, TempC: 55, PowerW: 350, PowerLimitW: 700,
			SMClockMHz: 1980, MemClockMHz: 2619, FanPercent: -1, Processes: []gpu.Process{{PID: 1234, MemBytes: 1 << 33}}})
	}
	return s
}

func mustMarshal(b *testing.B, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkViewerStart is a viewer's start with no daemon: open the replica,
// then list every known node (target: well under 300 ms).
func BenchmarkViewerStart(b *testing.B) {
	path := filepath.Join(b.TempDir(), "replica.db")
	self := writeBenchReplica(b, path)
	ctx := context.Background()
	for b.Loop() {
		db, err := store.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		svc := app.NewReader(db, app.Self{ID: self})
		nodes, err := svc.Nodes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(nodes) != benchNodes || nodes[benchNodes-1].Host == nil || len(nodes[1].GPUs) != 4 {
			b.Fatalf("listed %d nodes, want %d with their latest samples", len(nodes), benchNodes)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/op")
}
