package host

import (
	"context"
	"os"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// source is where a Sampler reads the machine; tests replace its funcs.
type source struct {
	cpuTimes   func(context.Context) ([]cpu.TimesStat, error)
	load       func(context.Context) (*load.AvgStat, error)
	memory     func(context.Context) (*mem.VirtualMemoryStat, error)
	netIO      func(context.Context) ([]net.IOCountersStat, error)
	partitions func(context.Context) ([]disk.PartitionStat, error)
	usage      func(ctx context.Context, path string) (*disk.UsageStat, error)
	stat       func(path string) (os.FileInfo, error)
}

// osSource reads this machine: through gopsutil, except where withProcfs
// has a cheaper reader of the same values for this OS.
func osSource() source {
	return withProcfs(gopsutilSource())
}

// gopsutilSource reads everything through gopsutil.
func gopsutilSource() source {
	return source{
		cpuTimes:   func(ctx context.Context) ([]cpu.TimesStat, error) { return cpu.TimesWithContext(ctx, false) },
		load:       load.AvgWithContext,
		memory:     mem.VirtualMemoryWithContext,
		netIO:      func(ctx context.Context) ([]net.IOCountersStat, error) { return net.IOCountersWithContext(ctx, true) },
		partitions: partitions,
		usage:      disk.UsageWithContext,
		stat:       os.Stat,
	}
}

// partitions lists every mount as this process sees it (gopsutil reads
// PID 1's view by default, which another mount namespace may not share).
func partitions(ctx context.Context) ([]disk.PartitionStat, error) {
	ctx = context.WithValue(ctx, common.EnvKey, common.EnvMap{common.HostProcMountinfo: "/proc/self/mountinfo"})
	return disk.PartitionsWithContext(ctx, true)
}
