//go:build linux && cgo

package gpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// readings collects what failed while reading one GPU. A reading that is not
// supported, or not permitted, is expected and left out.
type readings struct {
	errs []string
	lost bool // a call answered ERROR_GPU_IS_LOST: read no more
	// skip holds the readings that answered NOT_SUPPORTED: they are not
	// asked again (nil: none is remembered).
	skip map[string]bool
}

// ok reports whether ret is SUCCESS and records what failed otherwise. A
// reading the GPU does not support, or the library does not have, is
// remembered in skip.
func (r *readings) ok(what string, ret nvml.Return) bool {
	if r.lost && ret != nvml.SUCCESS {
		return false // said once
	}
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		if r.skip != nil {
			r.skip[what] = true
		}
		return false
	case nvml.ERROR_NO_PERMISSION:
		return false
	case nvml.ERROR_GPU_IS_LOST:
		r.lost = true
	}
	r.errs = append(r.errs, fmt.Sprintf("read %s: %v", what, ret))
	return false
}

func (r *readings) String() string { return strings.Join(r.errs, "; ") }

// ask makes call, unless the reading what answered NOT_SUPPORTED (or
// FUNCTION_NOT_FOUND) before, and reports whether it succeeded.
func ask[T any](r *readings, what string, call func() (T, nvml.Return)) (T, bool) {
	if r.skip[what] {
		var zero T
		return zero, false
	}
	v, ret := call()
	return v, r.ok(what, ret)
}

// readInfo reads what Open records about device i. A GPU whose memory NVML
// does not support shares the system's (unified.go): sysMem reads it.
func readInfo(i int, d Device, sysMem func() (total, used uint64, err error)) Info {
	var r readings
	info := Info{Index: i}
	if uuid, ret := d.GetUUID(); r.ok("uuid", ret) {
		info.UUID = uuid
	}
	if name, ret := d.GetName(); r.ok("name", ret) {
		info.Name = name
	}
	mem, ret := d.GetMemoryInfo()
	if r.ok("memory", ret) {
		info.MemTotalBytes = mem.Total
	} else if ret == nvml.ERROR_NOT_SUPPORTED {
		info.MemUnified = true
		if total, _, err := sysMem(); err == nil { // a failure is said by each sample
			info.MemTotalBytes = total
		}
	}
	if mw, ret := d.GetEnforcedPowerLimit(); r.ok("power limit", ret) {
		info.PowerLimitW = float64(mw) / 1000
	}
	return info
}

// readStats reads one sample of the device described by info, and
// assesses its health with what h remembers. st is what the sampler keeps
// of the device between samples: the readings it does not support, its
// energy counter, its power limit. A GPU found lost is read no further,
// now or later: its calls would only fail again.
func readStats(info Info, d Device, h *health, st *devState, now time.Time) Stats {
	r := readings{skip: st.skip}
	s := Stats{Index: info.Index, UUID: info.UUID, Name: info.Name, MemTotalBytes: info.MemTotalBytes, MemUnified: info.MemUnified,
		FanPercent: -1, PState: -1, Processes: []Process{}, Throttle: []string{}}
	if h.lost {
		s.Error, s.XIDErrors = h.lostReason, h.xids
		h.assess(&s, 0, 0, false, false, now)
		return s
	}
	var f faults
	steps := []func(){
		func() {
			if u, ok := ask(&r, "utilization", d.GetUtilizationRates); ok {
				s.UtilPercent, s.MemUtilPercent = float64(u.Gpu), float64(u.Memory)
			}
		},
		func() { readMemory(&r, d, st, &s) },
		func() {
			if t, ok := ask(&r, "temperature", func() (uint32, nvml.Return) { return d.GetTemperature(nvml.TEMPERATURE_GPU) }); ok {
				s.TempC = float64(t)
			}
		},
		func() { readPower(&r, d, st, &s, now) },
		func() { readEnergy(&r, d, &st.energy, &s, now) },
		func() { readClocks(&r, d, &s) },
		func() { s.Processes = readProcesses(&r, d) },
		func() { f = readFaults(&r, d, &s) },
	}
	for _, step := range steps {
		if step(); r.lost {
			h.lost, h.lostReason = true, "GPU is lost ("+r.errs[len(r.errs)-1]+")"
			break
		}
	}
	s.Error = r.String()
	s.XIDErrors = h.xids
	h.assess(&s, f.throttle, f.corrected, f.corrOK, f.remapFailed, now)
	return s
}

// readMemory reads memory as nvidia-smi shows it: NVML's v2 memory info
// keeps the driver's reserved memory apart from used (v1 counts it as used,
// hundreds of MiB on an idle GPU). A driver without v2 (before R510) gets v1.
// A GPU with unified memory shows the system's (readUnified).
func readMemory(r *readings, d Device, st *devState, s *Stats) {
	if s.MemUnified {
		readUnified(r, st, s)
		return
	}
	if mem, ok := ask(r, "memory", d.GetMemoryInfo_v2); ok {
		s.MemUsedBytes, s.MemReservedBytes, s.MemTotalBytes = mem.Used, mem.Reserved, mem.Total
		return
	}
	if !r.skip["memory"] || r.lost {
		return // v2 failed for another reason: said in Error
	}
	if mem, ok := ask(r, "memory (v1)", d.GetMemoryInfo); ok {
		s.MemUsedBytes, s.MemTotalBytes = mem.Used, mem.Total
	}
}

// faults is what readFaults read beside the fields of Stats.
type faults struct {
	throttle    uint64
	corrected   uint64 // volatile correctable ECC errors
	corrOK      bool   // corrected was read
	remapFailed bool
}

// readFaults reads throttling, ECC counters and pending page retirements
// or row remappings. Each is NOT_SUPPORTED somewhere (no ECC on consumer
// GPUs, retirement before Ampere and remapping since): that leaves its zero
// value, and it is not asked again.
func readFaults(r *readings, d Device, s *Stats) faults {
	var f faults
	steps := []func(){
		func() {
			if bits, ok := ask(r, "throttle reasons", d.GetCurrentClocksThrottleReasons); ok {
				f.throttle, s.Throttle = bits, throttleList(bits)
			}
		},
		func() {
			if n, ok := ask(r, "uncorrectable ECC errors", func() (uint64, nvml.Return) {
				return d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
			}); ok {
				s.ECCUncorrected = n
			}
		},
		func() {
			if n, ok := ask(r, "correctable ECC errors", func() (uint64, nvml.Return) {
				return d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC)
			}); ok {
				f.corrected, f.corrOK = n, true
			}
		},
		func() {
			if st, ok := ask(r, "retired pages", d.GetRetiredPagesPendingStatus); ok && st == nvml.FEATURE_ENABLED {
				s.RetiredPending = true
			}
		},
		func() {
			if rows, ok := ask(r, "remapped rows", func() (remapped, nvml.Return) {
				_, _, pending, failed, ret := d.GetRemappedRows()
				return remapped{pending, failed}, ret
			}); ok {
				s.RetiredPending = s.RetiredPending || rows.pending
				f.remapFailed = rows.failed
			}
		},
	}
	for _, step := range steps {
		if step(); r.lost {
			break
		}
	}
	return f
}

type remapped struct{ pending, failed bool }

// limitEvery is how often the enforced power limit is read again (an
// administrator may change it; nothing else does).
const limitEvery = time.Minute

func readPower(r *readings, d Device, st *devState, s *Stats, now time.Time) {
	if mw, ok := ask(r, "power", d.GetPowerUsage); ok {
		s.PowerW = float64(mw) / 1000
		st.energy.power(s.PowerW, now)
	}
	if st.limitAt.IsZero() || now.Sub(st.limitAt) >= limitEvery || now.Before(st.limitAt) {
		st.limitW = 0
		if mw, ok := ask(r, "power limit", d.GetEnforcedPowerLimit); ok {
			st.limitW = float64(mw) / 1000
		}
		st.limitAt = now
	}
	s.PowerLimitW = st.limitW
	if fan, ok := ask(r, "fan speed", d.GetFanSpeed); ok {
		s.FanPercent = int(fan)
	}
	if p, ok := ask(r, "performance state", d.GetPerformanceState); ok && p != nvml.PSTATE_UNKNOWN {
		s.PState = int(p)
	}
}

func readClocks(r *readings, d Device, s *Stats) {
	if mhz, ok := ask(r, "sm clock", func() (uint32, nvml.Return) { return d.GetClockInfo(nvml.CLOCK_SM) }); ok {
		s.SMClockMHz = int(mhz)
	}
	if mhz, ok := ask(r, "memory clock", func() (uint32, nvml.Return) { return d.GetClockInfo(nvml.CLOCK_MEM) }); ok {
		s.MemClockMHz = int(mhz)
	}
}

// readProcesses lists compute and graphics processes once each, by PID.
func readProcesses(r *readings, d Device) []Process {
	var all []nvml.ProcessInfo
	if ps, ok := ask(r, "compute processes", d.GetComputeRunningProcesses); ok {
		all = append(all, ps...)
	}
	compute := len(all)
	if ps, ok := ask(r, "graphics processes", d.GetGraphicsRunningProcesses); ok {
		all = append(all, ps...)
	}
	out := make([]Process, 0, len(all))
	for k, p := range all {
		mem := p.UsedGpuMemory
		if mem == math.MaxUint64 { // NVML_VALUE_NOT_AVAILABLE
			mem = 0
		}
		i := slices.IndexFunc(out, func(q Process) bool { return q.PID == p.Pid })
		if i < 0 {
			out = append(out, Process{PID: p.Pid, MemBytes: mem, Compute: k < compute})
		} else {
			out[i].MemBytes = max(out[i].MemBytes, mem)
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return cmp.Compare(a.PID, b.PID) })
	return out
}
