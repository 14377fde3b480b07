package app

import (
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

func hostStats(s agent.Sample) *HostStats {
	h := &HostStats{
		CPUPercent: s.Host.CPUPercent, Load1: s.Host.Load1,
		MemUsedBytes: s.Host.MemUsedBytes, MemTotalBytes: s.Host.MemTotalBytes,
		NetRxBps: s.Host.NetRxBps, NetTxBps: s.Host.NetTxBps, Disks: []Disk{},
	}
	for _, d := range s.Host.Disks {
		h.Disks = append(h.Disks, Disk{Mount: d.Mount, UsedBytes: d.UsedBytes, TotalBytes: d.TotalBytes})
	}
	return h
}

// gpuView is g as people see it, with who held it and its processes
// (held).
func gpuView(n Node, g gpu.Stats, held alloc.Holding) GPU {
	h := held.GPU(g.UUID)
	return GPU{
		Node: n.ID, NodeName: n.Name, Index: g.Index, UUID: g.UUID, Name: g.Name,
		UtilPercent: g.UtilPercent, MemUtilPercent: g.MemUtilPercent,
		MemUsedBytes: g.MemUsedBytes, MemTotalBytes: g.MemTotalBytes, MemReservedBytes: g.MemReservedBytes,
		MemUnified: g.MemUnified,
		TempC:      g.TempC, PowerW: g.PowerW, PowerLimitW: g.PowerLimitW,
		SMClockMHz: g.SMClockMHz, MemClockMHz: g.MemClockMHz, FanPercent: g.FanPercent,
		Processes: len(g.Processes),
		Health:    g.Health, HealthReason: g.HealthReason, Throttle: orEmpty(g.Throttle), EnergyMJ: g.EnergyMJ,
		XIDErrors: g.XIDErrors, ECCUncorrected: g.ECCUncorrected, RetiredPending: g.RetiredPending,
		Job: h.JobID(), Holder: h.Scheduler(), ProcessList: processViews(g.Processes, held),
	}
}

// processViews are ps as people see them, each with who runs it (held).
func processViews(ps []gpu.Process, held alloc.Holding) []GPUProcess {
	out := make([]GPUProcess, len(ps))
	for i, p := range ps {
		h := held.Proc(p.PID)
		out[i] = GPUProcess{PID: p.PID, MemBytes: p.MemBytes, Job: h.JobID(), Owner: h.Member, Holder: h.Scheduler()}
	}
	return out
}

// point reduces a sample to what the sparklines draw.
func point(node string, s agent.Sample) Sample {
	p := Sample{Node: node, Time: s.Time, CPUPercent: s.Host.CPUPercent,
		GPUUtil: make([]float64, len(s.GPUs)), GPUMemPct: make([]float64, len(s.GPUs))}
	if s.Host.MemTotalBytes > 0 {
		p.MemPercent = 100 * float64(s.Host.MemUsedBytes) / float64(s.Host.MemTotalBytes)
	}
	for i, g := range s.GPUs {
		p.GPUUtil[i] = g.UtilPercent
		if g.MemTotalBytes > 0 {
			p.GPUMemPct[i] = 100 * float64(g.MemUsedBytes) / float64(g.MemTotalBytes)
		}
	}
	return p
}

func pointFromNode(n Node) Sample {
	p := Sample{Node: n.ID, Time: n.LastSeen, GPUUtil: []float64{}, GPUMemPct: []float64{}}
	if n.Host != nil {
		p.CPUPercent = n.Host.CPUPercent
		if n.Host.MemTotalBytes > 0 {
			p.MemPercent = 100 * float64(n.Host.MemUsedBytes) / float64(n.Host.MemTotalBytes)
		}
	}
	for _, g := range n.GPUs {
		p.GPUUtil = append(p.GPUUtil, g.UtilPercent)
		pct := 0.0
		if g.MemTotalBytes > 0 {
			pct = 100 * float64(g.MemUsedBytes) / float64(g.MemTotalBytes)
		}
		p.GPUMemPct = append(p.GPUMemPct, pct)
	}
	return p
}
