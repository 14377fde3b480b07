package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/shirou/gopsutil/v4/cpu"
	gohost "github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"
)

// Info reads what changes rarely about this machine. It fills what it could
// read even when err is not nil.
func (s *Sampler) Info(ctx context.Context) (Info, error) {
	var info Info
	var errs []error
	var err error
	if info.Hostname, err = os.Hostname(); err != nil {
		errs = append(errs, fmt.Errorf("read hostname: %w", err))
	}
	info.OS = osName(ctx)
	info.GOOS, info.Arch = runtime.GOOS, runtime.GOARCH
	if info.BootTime, err = gohost.BootTimeWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("read boot time: %w", err))
	}
	if info.Kernel, err = gohost.KernelVersionWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("read kernel version: %w", err))
	}
	info.CPUModel = cpuModel(ctx)
	if info.Cores, err = cpu.CountsWithContext(ctx, true); err != nil || info.Cores == 0 {
		info.Cores = runtime.NumCPU()
	}
	if vm, err := mem.VirtualMemoryWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("read memory: %w", err))
	} else {
		info.MemTotalBytes = vm.Total
	}
	return info, errors.Join(errs...)
}

// osName is the distribution and its version, e.g. "ubuntu 24.04", or the
// Go name of the OS where there is no better one.
func osName(ctx context.Context) string {
	platform, _, version, err := gohost.PlatformInformationWithContext(ctx)
	if err != nil || platform == "" {
		return runtime.GOOS
	}
	return strings.TrimSpace(platform + " " + version)
}

func cpuModel(ctx context.Context) string {
	cpus, err := cpu.InfoWithContext(ctx)
	if err != nil || len(cpus) == 0 {
		return runtime.GOARCH
	}
	return strings.TrimSpace(cpus[0].ModelName)
}
