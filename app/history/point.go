package history

import (
	"math"
	"slices"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
)

// MetricInfo names one figure a tier keeps, and its unit.
type MetricInfo struct {
	Name string
	Unit string
}

// The figures kept of each GPU, in the order of GPUPoint.M.
var GPUMetrics = []MetricInfo{
	{"util_percent", "%"}, {"mem_util_percent", "%"}, {"mem_used_bytes", "B"}, {"temp_c", "°C"},
	{"power_w", "W"}, {"sm_clock_mhz", "MHz"}, {"mem_clock_mhz", "MHz"},
}

// The figures kept of the host, in the order of Point.Host.
var HostMetrics = []MetricInfo{
	{"cpu_percent", "%"}, {"mem_used_bytes", "B"}, {"net_rx_bps", "B/s"}, {"net_tx_bps", "B/s"},
	{"disk_used_percent", "%"},
}

const (
	nGPUMetrics  = 7
	nHostMetrics = 5
)

// Indexes of the figures used outside the codec.
const (
	gpuUtil, gpuMemUtil, gpuMemUsed, gpuTemp, gpuPower, gpuSMClock, gpuMemClock = 0, 1, 2, 3, 4, 5, 6
	hostCPU, hostMemUsed, hostRx, hostTx, hostDisk                              = 0, 1, 2, 3, 4
)

// BusyPercent is the utilization from which a GPU counts as busy.
const BusyPercent = 5

// Agg is a figure over a period: its lowest, mean and highest value.
type Agg struct {
	Min, Mean, Max float64
}

func one(v float64) Agg { return Agg{v, v, v} }

// Point is one record of a tier: the figures of a node over a period that
// starts at Time (a single sample when N is 1).
type Point struct {
	Time time.Time
	N    int // the 1 s samples it stands for
	Host [nHostMetrics]Agg
	GPUs []GPUPoint
}

// GPUPoint is one GPU's figures over a point's period.
type GPUPoint struct {
	Index int
	N     int // the samples in which the GPU reported
	M     [nGPUMetrics]Agg
	// Busy and IdleGranted are the fractions of those samples in which
	// the GPU was busy (utilization at least BusyPercent, or a process
	// outside labpool), and granted to a job but idle. The rest is free.
	Busy, IdleGranted float64
}

// State of a GPU in one sample.
const (
	stateFree = iota
	stateBusy
	stateIdleGranted
)

// gpuState says whether g is busy, idle but granted, or free, by who held
// it and its processes (held).
func gpuState(g gpu.Stats, held alloc.Holding) int {
	if g.UtilPercent >= BusyPercent || outsideProcess(g, held) {
		return stateBusy
	}
	if held.GPU(g.UUID).Held() {
		return stateIdleGranted // a job holds it: one of labpool's, or a Slurm job on a compute node
	}
	return stateFree
}

// outsideProcess reports whether a process outside labpool (held by no
// one) uses g; one in a Slurm job is the job's, which holds the GPU.
func outsideProcess(g gpu.Stats, held alloc.Holding) bool {
	for _, p := range g.Processes {
		if !held.Proc(p.PID).Held() {
			return true
		}
	}
	return false
}

// FromSample is the point of one sample.
func FromSample(s agent.Sample) Point {
	p := Point{Time: s.Time, N: 1}
	h := s.Host
	p.Host = [nHostMetrics]Agg{one(h.CPUPercent), one(float64(h.MemUsedBytes)), one(h.NetRxBps), one(h.NetTxBps), one(diskPercent(h.Disks))}
	p.GPUs = make([]GPUPoint, len(s.GPUs))
	for i, g := range s.GPUs {
		gp := GPUPoint{Index: g.Index, N: 1, M: [nGPUMetrics]Agg{one(g.UtilPercent), one(g.MemUtilPercent),
			one(float64(g.MemUsedBytes)), one(g.TempC), one(g.PowerW), one(float64(g.SMClockMHz)), one(float64(g.MemClockMHz))}}
		switch gpuState(g, s.Holding) {
		case stateBusy:
			gp.Busy = 1
		case stateIdleGranted:
			gp.IdleGranted = 1
		}
		p.GPUs[i] = gp
	}
	return p
}

// diskPercent is the used share of the fullest disk, 0 with none.
func diskPercent(ds []host.Disk) float64 {
	var pct float64
	for _, d := range ds {
		if d.TotalBytes > 0 {
			pct = max(pct, 100*float64(d.UsedBytes)/float64(d.TotalBytes))
		}
	}
	return pct
}

// Merge folds points (of one node, in time order) into one point of the
// period starting at start: the lowest minimum, the highest maximum, and
// means weighted by the samples each point stands for. A GPU counts only
// in the points it appears in.
func Merge(ps []Point, start time.Time) Point {
	out := Point{Time: start}
	for i := range out.Host {
		out.Host[i] = Agg{Min: math.Inf(1), Max: math.Inf(-1)}
	}
	byIndex := map[int]int{} // GPU index -> position in out.GPUs
	for _, p := range ps {
		out.N += p.N
		for i, a := range p.Host {
			fold(&out.Host[i], a, p.N)
		}
		for _, g := range p.GPUs {
			j, ok := byIndex[g.Index]
			if !ok {
				j = len(out.GPUs)
				byIndex[g.Index] = j
				ng := GPUPoint{Index: g.Index}
				for k := range ng.M {
					ng.M[k] = Agg{Min: math.Inf(1), Max: math.Inf(-1)}
				}
				out.GPUs = append(out.GPUs, ng)
			}
			o := &out.GPUs[j]
			o.N += g.N
			for k, a := range g.M {
				fold(&o.M[k], a, g.N)
			}
			o.Busy += g.Busy * float64(g.N)
			o.IdleGranted += g.IdleGranted * float64(g.N)
		}
	}
	for i := range out.Host {
		finish(&out.Host[i], out.N)
	}
	for j := range out.GPUs {
		o := &out.GPUs[j]
		for k := range o.M {
			finish(&o.M[k], o.N)
		}
		if o.N > 0 {
			o.Busy /= float64(o.N)
			o.IdleGranted /= float64(o.N)
		}
	}
	slices.SortFunc(out.GPUs, func(a, b GPUPoint) int { return a.Index - b.Index })
	return out
}

// fold adds a, standing for n samples, to the running aggregate o (whose
// Mean is a weighted sum until finish).
func fold(o *Agg, a Agg, n int) {
	o.Min = min(o.Min, a.Min)
	o.Max = max(o.Max, a.Max)
	o.Mean += a.Mean * float64(n)
}

func finish(o *Agg, n int) {
	if n == 0 {
		*o = Agg{}
		return
	}
	o.Mean /= float64(n)
}

// GPU returns the figures of the GPU index, if the point has them.
func (p *Point) GPU(index int) (GPUPoint, bool) {
	for _, g := range p.GPUs {
		if g.Index == index {
			return g, true
		}
	}
	return GPUPoint{}, false
}

// Sample returns the means of p as a sample (no names, processes or
// totals: a tier keeps none).
func (p Point) Sample() agent.Sample {
	s := agent.Sample{Time: p.Time, Host: host.Stats{CPUPercent: p.Host[hostCPU].Mean,
		MemUsedBytes: uint64(p.Host[hostMemUsed].Mean), NetRxBps: p.Host[hostRx].Mean, NetTxBps: p.Host[hostTx].Mean}}
	for _, g := range p.GPUs {
		s.GPUs = append(s.GPUs, gpu.Stats{Index: g.Index, UtilPercent: g.M[gpuUtil].Mean, MemUtilPercent: g.M[gpuMemUtil].Mean,
			MemUsedBytes: uint64(g.M[gpuMemUsed].Mean), TempC: g.M[gpuTemp].Mean, PowerW: g.M[gpuPower].Mean,
			SMClockMHz: int(math.Round(g.M[gpuSMClock].Mean)), MemClockMHz: int(math.Round(g.M[gpuMemClock].Mean))})
	}
	return s
}
