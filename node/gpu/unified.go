//go:build linux && cgo

package gpu

import (
	"fmt"

	"github.com/shirou/gopsutil/v4/mem"
)

// A GPU with unified memory (a GB10 in a DGX Spark; a Jetson) has no memory
// of its own: NVML answers NOT_SUPPORTED for its memory info, v1 and v2.
// Its memory is the system's, so the Sampler shows the system's total and
// used as the GPU's, with MemUnified set, and placement by GPU memory
// (node/jobs) reads them as one pool with the host's: a job's use counts
// once, whether its processes allocate it on the GPU or on the CPU.

// systemMemory reads the system's memory: total, and used as total less
// available (as the host meter, node/host, counts it).
func systemMemory() (total, used uint64, err error) {
	vm, err := mem.VirtualMemory()
	if err != nil {
		return 0, 0, err
	}
	return vm.Total, vm.Total - min(vm.Available, vm.Total), nil
}

// readUnified fills s's memory from the system's. NVML is not asked: it
// said NOT_SUPPORTED in Open. The processes' own figures (NVML's per
// process memory, where the driver gives it) are part of used already.
func readUnified(r *readings, st *devState, s *Stats) {
	total, used, err := st.sysMem()
	if err != nil {
		r.errs = append(r.errs, fmt.Sprintf("read system memory (unified): %v", err))
		s.MemTotalBytes, s.MemUsedBytes = 0, 0
		return
	}
	s.MemTotalBytes, s.MemUsedBytes = total, used
}
