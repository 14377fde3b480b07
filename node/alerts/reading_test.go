package alerts

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
)

func TestReadingOf(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := agent.Sample{Time: now,
		Host: host.Stats{CPUPercent: 12, MemUsedBytes: 25, MemTotalBytes: 100, Disks: []host.Disk{
			{Mount: "/", UsedBytes: 10, TotalBytes: 100}, {Mount: "/data", UsedBytes: 91, TotalBytes: 100}, {Mount: "/data2", UsedBytes: 1, TotalBytes: 100}}},
		GPUs: []gpu.Stats{
			{Index: 0, UUID: "GPU-a", UtilPercent: 3, TempC: 88, PowerW: 300, MemUsedBytes: 40, MemTotalBytes: 80,
				Health: gpu.HealthQuarantined, HealthReason: "XID 79", Throttle: []string{"hw_thermal_slowdown"}},
			{Index: 1, UUID: "GPU-b"},
		},
		Holding: alloc.Holding{GPUs: map[string]alloc.Holder{"GPU-b": {Kind: alloc.Job, ID: "from-sample"}}}}
	got := ReadingOf(s, map[string]string{"GPU-a": "job1"}, []Folder{{"big", "/data/sets"}, {"root", "/srv/x"}, {"d2", "/data2"}})
	want := Reading{Time: now, CPUPercent: 12, MemPercent: 25,
		GPUs: []GPUReading{
			{Index: 0, UUID: "GPU-a", TempC: 88, UtilPercent: 3, MemUsedPercent: 50, PowerW: 300, Health: "quarantined",
				HealthReason: "XID 79", Throttle: []string{"hw_thermal_slowdown"}, Job: "job1"},
			{Index: 1, UUID: "GPU-b", Job: "from-sample"},
		},
		Folders: []FolderReading{{"big", 91}, {"root", 10}, {"d2", 1}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ReadingOf (-want +got):\n%s", d)
	}
}
