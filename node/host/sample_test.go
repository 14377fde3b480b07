package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// fakeMachine is a machine whose counters a test sets.
type fakeMachine struct {
	cpu     cpu.TimesStat
	ifaces  []net.IOCountersStat
	loadErr error
}

func (m *fakeMachine) source() source {
	return source{
		cpuTimes: func(context.Context) ([]cpu.TimesStat, error) { return []cpu.TimesStat{m.cpu}, nil },
		load: func(context.Context) (*load.AvgStat, error) {
			return &load.AvgStat{Load1: 1.5, Load5: 1, Load15: 0.5}, m.loadErr
		},
		memory: func(context.Context) (*mem.VirtualMemoryStat, error) {
			return &mem.VirtualMemoryStat{Total: 64 << 30, Used: 16 << 30}, nil
		},
		netIO:      func(context.Context) ([]net.IOCountersStat, error) { return m.ifaces, nil },
		partitions: func(context.Context) ([]disk.PartitionStat, error) { return nil, nil },
	}
}

func newFakeSampler(m *fakeMachine) *Sampler {
	s := NewSampler(DefaultConfig())
	s.src = m.source()
	return s
}

func TestSampleRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeMachine{
			cpu: cpu.TimesStat{User: 100, System: 50, Idle: 800, Iowait: 50},
			ifaces: []net.IOCountersStat{
				{Name: "lo", BytesRecv: 1e9, BytesSent: 1e9},
				{Name: "eth0", BytesRecv: 1000, BytesSent: 2000},
				{Name: "eth1", BytesRecv: 5e6, BytesSent: 5e6},
				{Name: "veth12ab", BytesRecv: 1e6, BytesSent: 1e6},
			},
		}
		s := newFakeSampler(m)
		first, err := s.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := Stats{Load1: 1.5, Load5: 1, Load15: 0.5, MemUsedBytes: 16 << 30, MemTotalBytes: 64 << 30, Disks: []Disk{}}
		if diff := cmp.Diff(want, first); diff != "" {
			t.Errorf("first Sample (-want +got):\n%s", diff)
		}

		time.Sleep(2 * time.Second)
		m.cpu = cpu.TimesStat{User: 130, System: 60, Guest: 5, Idle: 860, Iowait: 50} // 40 busy of 100
		m.ifaces = []net.IOCountersStat{
			{Name: "lo", BytesRecv: 2e9, BytesSent: 2e9},                 // skipped
			{Name: "eth0", BytesRecv: 1000 + 4e6, BytesSent: 2000 + 2e6}, // 2 MB/s in, 1 MB/s out
			{Name: "eth1", BytesRecv: 10, BytesSent: 10},                 // reset: 0
			{Name: "wlan0", BytesRecv: 8e6, BytesSent: 8e6},              // new: 0
			{Name: "veth12ab", BytesRecv: 9e9, BytesSent: 9e9},           // skipped
		}
		second, err := s.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want.CPUPercent, want.NetRxBps, want.NetTxBps = 40, 2e6, 1e6
		if diff := cmp.Diff(want, second); diff != "" {
			t.Errorf("second Sample (-want +got):\n%s", diff)
		}
	})
}

func TestSamplePartial(t *testing.T) {
	m := &fakeMachine{loadErr: errors.New("no loadavg")}
	s := newFakeSampler(m)
	st, err := s.Sample(t.Context())
	if err == nil || !strings.Contains(err.Error(), "read load average: no loadavg") {
		t.Errorf("Sample() error = %v; want the load error", err)
	}
	if st.MemTotalBytes != 64<<30 {
		t.Errorf("Sample() with a failed part lost the rest: %+v", st)
	}
}
