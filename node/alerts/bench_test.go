package alerts

import (
	"fmt"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
)

// BenchmarkEvaluate is the evaluator's cost per sample of a machine with 8
// GPUs, 4 of them granted, 2 shared folders and 3 peers, with the default
// rules: what alerts add to the agent at 1 Hz.
func BenchmarkEvaluate(b *testing.B) {
	s := agent.Sample{Host: host.Stats{CPUPercent: 20, MemUsedBytes: 1 << 30, MemTotalBytes: 8 << 30,
		Disks: []host.Disk{{Mount: "/", UsedBytes: 10, TotalBytes: 100}, {Mount: "/data", UsedBytes: 50, TotalBytes: 100}}}}
	grants := map[string]string{}
	for i := range 8 {
		u := fmt.Sprintf("GPU-%d", i)
		s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: u, TempC: 60, UtilPercent: 50, MemUsedBytes: 1 << 30,
			MemTotalBytes: 80 << 30, Health: "ok", Throttle: []string{"sw_power_cap"}})
		if i%2 == 0 {
			grants[u] = "job"
		}
	}
	folders := []Folder{{"data", "/data/x"}, {"home", "/home/lab"}}
	peers := []PeerReading{{Node: "A"}, {Node: "B"}, {Node: "C"}}
	e := NewEvaluator(selfID, &fakeSink{}, discard())
	start := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Time = start.Add(time.Duration(i) * time.Second)
		rd := ReadingOf(s, grants, folders)
		rd.Peers = peers
		e.Evaluate(rd)
	}
}
