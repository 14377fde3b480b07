package app

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// The report's arithmetic: a pure function of plain values (job grants and
// per-GPU readings), whatever stores them.

// idleBelow is the utilization (percent) under which granted time is idle.
const idleBelow = 5.0

// joulesPerKWh converts energy.
const joulesPerKWh = 3.6e6

// reportJob is one job's grant: GPUs of Node from Start to End (zero End:
// still held at the window's end).
type reportJob struct {
	ID, Name, Node, Owner string
	GPUs                  []int
	// Weights, parallel to GPUs, is the fraction of each held (a share, a
	// MIG instance; see weights.of); nil: each whole.
	Weights []float64
	// Cluster is how many of a Slurm cluster's GPUs the job held: GPUs
	// the report has no samples of (none of its agent's own).
	Cluster    int
	Start, End time.Time
	// Holder is set on the grant a Slurm compute node saw ("slurm job
	// 123", see SlurmHold): it stands in for the cluster agent's own.
	Holder string
}

// gpuUsage is one GPU's readings, oldest first: utilization and power,
// and NVML's total energy counter (millijoules since the driver loaded),
// whose difference between two readings is the energy drawn between them,
// gaps included.
type gpuUsage struct {
	Node    string
	GPU     int
	Points  []usagePoint
	Counter []counterReading

	spans []counterSpan // of Counter, once computed (see trusted)
}

// counterReading is one reading of a GPU's energy counter.
type counterReading struct {
	Time time.Time
	MJ   uint64
}

// usagePoint is one reading of utilization and power. They stand for the
// time since the previous point, or Span before it when that is nearer (a
// longer gap is missing samples), less the share Missing of that time (0
// to 1: a point of a tier whose samples were partly missing).
type usagePoint struct {
	Time        time.Time
	Span        time.Duration
	UtilPercent float64
	PowerW      float64
	Missing     float64
}

// reportInput is everything a report is computed from.
type reportInput struct {
	Since, Until time.Time
	By           string
	Jobs         []reportJob
	GPUs         []gpuUsage
	Names        map[string]string    // device ID -> name
	Owners       map[string]personRef // a member's device ID -> their person
	weights      weights              // how much of a GPU each record's grant counts
	reserved     []unusedHold         // reservations' time held but unused
	adjusted     []ReportAdjustment
	step         time.Duration // resolution of GPUs, for the reply
}

// measure is what one GPU did over one span, in seconds and joules.
type measure struct {
	granted, measured, used, idle float64
	counterJ, powerJ              float64
}

// scale is m weighed by w: a share of a GPU holds that share of its time,
// its use and its energy.
func (m measure) scale(w float64) measure {
	if w == 1 {
		return m
	}
	return measure{m.granted * w, m.measured * w, m.used * w, m.idle * w, m.counterJ * w, m.powerJ * w}
}

func (m *measure) add(o measure) {
	m.granted += o.granted
	m.measured += o.measured
	m.used += o.used
	m.idle += o.idle
	m.counterJ += o.counterJ
	m.powerJ += o.powerJ
}

// measureSpan measures u over [a, b). Energy comes from the counter where
// two readings bound a stretch and the counter did not go back (a GPU
// reset or driver reload zeroes it); elsewhere from power over the time a
// point stands for.
func measureSpan(u *gpuUsage, a, b time.Time) measure {
	m := measure{granted: seconds(a, b)}
	spans := u.trusted()
	for _, c := range spans[sort.Search(len(spans), func(i int) bool { return spans[i].end.After(a) }):] {
		if !c.start.Before(b) {
			break
		}
		m.counterJ += c.joules * overlap(c.start, c.end, a, b) / seconds(c.start, c.end)
	}
	k := 0 // the first span that may overlap the current point
	first := sort.Search(len(u.Points), func(i int) bool { return u.Points[i].Time.After(a) })
	for i := first; i < len(u.Points); i++ {
		p := &u.Points[i]
		start := p.Time.Add(-p.Span)
		if i > 0 && u.Points[i-1].Time.After(start) {
			start = u.Points[i-1].Time
		}
		if !start.Before(b) {
			break
		}
		span := overlap(start, p.Time, a, b)
		o := span * (1 - p.Missing)
		m.measured += o
		m.used += o * p.UtilPercent / 100
		if o > 0 && p.UtilPercent < idleBelow {
			m.idle += o
		}
		s, e := later(start, a), earlier(p.Time, b)
		if k == 0 && len(spans) > 0 {
			k = sort.Search(len(spans), func(i int) bool { return spans[i].end.After(s) })
		}
		for k < len(spans) && !spans[k].end.After(s) {
			k++
		}
		covered := 0.0
		for j := k; j < len(spans) && spans[j].start.Before(e); j++ {
			covered += overlap(spans[j].start, spans[j].end, s, e)
		}
		m.powerJ += p.PowerW * max(0, span-covered) * (1 - p.Missing)
	}
	return m
}

// counterSpan is the energy a counter measured between two readings.
type counterSpan struct {
	start, end time.Time
	joules     float64
}

// trusted returns the stretches between consecutive counter readings over
// which the counter can be trusted: it read something and did not go back.
// It computes them once.
func (u *gpuUsage) trusted() []counterSpan {
	if u.spans != nil || len(u.Counter) < 2 {
		return u.spans
	}
	u.spans = make([]counterSpan, 0, len(u.Counter)-1)
	for i := 1; i < len(u.Counter); i++ {
		p, c := u.Counter[i-1], u.Counter[i]
		if p.MJ > 0 && c.MJ >= p.MJ && c.Time.After(p.Time) {
			u.spans = append(u.spans, counterSpan{p.Time, c.Time, float64(c.MJ-p.MJ) / 1000})
		}
	}
	return u.spans
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// overlap is the length in seconds of [s, e) within [a, b).
func overlap(s, e, a, b time.Time) float64 {
	if s.Before(a) {
		s = a
	}
	if e.After(b) {
		e = b
	}
	return max(0, seconds(s, e))
}

func seconds(a, b time.Time) float64 { return b.Sub(a).Seconds() }

// computeReport is the report of in.
func computeReport(in reportInput) Report {
	series := map[string]*gpuUsage{}
	for i := range in.GPUs {
		series[gpuKey(in.GPUs[i].Node, in.GPUs[i].GPU)] = &in.GPUs[i]
	}
	rows := map[string]*reportAcc{}
	acc := func(key, label string) *reportAcc {
		if rows[key] == nil {
			rows[key] = &reportAcc{row: ReportRow{Key: key, Label: label}}
		}
		return rows[key]
	}
	var totals reportAcc
	for _, j := range in.Jobs {
		a, b := j.Start, j.End
		if b.IsZero() || b.After(in.Until) {
			b = in.Until
		}
		if a.Before(in.Since) {
			a = in.Since
		}
		if !b.After(a) {
			continue
		}
		if j.Cluster > 0 { // no sample: granted, unmeasured
			m := measure{granted: seconds(a, b) * float64(j.Cluster)}
			key, label := in.rowOf(j, clusterIndex)
			acc(key, label).granted.add(m)
			totals.granted.add(m)
		}
		for i, idx := range j.GPUs {
			w := 1.0
			if j.Weights != nil {
				w = j.Weights[i]
			}
			if w <= 0 {
				continue
			}
			u := series[gpuKey(j.Node, idx)]
			if u == nil {
				u = &gpuUsage{}
			}
			m := measureSpan(u, a, b).scale(w)
			key, label := in.rowOf(j, idx)
			acc(key, label).granted.add(m)
			totals.granted.add(m)
		}
	}
	for _, h := range in.reserved {
		key, label := in.reservedRow(h)
		acc(key, label).reservedUnused += h.seconds
		totals.reservedUnused += h.seconds
	}
	for i := range in.GPUs {
		u := &in.GPUs[i]
		m := measureSpan(u, in.Since, in.Until)
		m.granted = 0
		totals.whole.add(m)
		if in.By == ReportByNode || in.By == ReportByGPU {
			key, label := in.rowOf(reportJob{Node: u.Node}, u.GPU)
			acc(key, label).whole.add(m)
		}
	}
	rep := Report{Since: in.Since, Until: in.Until, By: in.By, Rows: make([]ReportRow, 0, len(rows)), Totals: totals.result()}
	rep.Totals.Key, rep.Totals.Label = "", "total"
	for _, a := range rows {
		rep.Rows = append(rep.Rows, a.result())
	}
	sort.Slice(rep.Rows, func(i, k int) bool {
		a, b := rep.Rows[i], rep.Rows[k]
		if a.GPUHoursGranted != b.GPUHoursGranted {
			return a.GPUHoursGranted > b.GPUHoursGranted
		}
		if a.EnergyTotalKWh != b.EnergyTotalKWh {
			return a.EnergyTotalKWh > b.EnergyTotalKWh
		}
		return a.Key < b.Key
	})
	return rep
}

// rowOf is the key and label of the row GPU idx of j's grant counts in.
func (in reportInput) rowOf(j reportJob, idx int) (key, label string) {
	switch in.By {
	case ReportByMember, ReportByDevice:
		if j.Owner == "" { // its record proves no member launched it
			return UnverifiedOwner, UnverifiedOwner
		}
		p, ok := in.Owners[j.Owner]
		switch {
		case !ok: // not a member's device: named as before people
			return j.Owner, in.name(j.Owner)
		case in.By == ReportByMember:
			return p.ID, p.Label
		}
		return j.Owner, p.DeviceLabel
	case ReportByNode:
		return j.Node, in.name(j.Node)
	case ReportByGPU:
		if idx == clusterIndex {
			return j.Node + ":cluster", in.name(j.Node) + ":cluster"
		}
		return gpuKey(j.Node, idx), in.name(j.Node) + ":" + strconv.Itoa(idx)
	}
	return j.ID, j.Name
}

// reservedRow is the key and label of the row h counts in: by member its
// member's, by job the reservation's own ("reservation:ID").
func (in reportInput) reservedRow(h unusedHold) (key, label string) {
	if in.By == ReportByJob {
		return "reservation:" + h.holder.ID, "reservation " + cmpOr(h.holder.Name, h.holder.ID)
	}
	return in.rowOf(reportJob{Node: h.node, Owner: h.holder.Member}, h.index)
}

func (in reportInput) name(id string) string {
	if n := in.Names[id]; n != "" {
		return n
	}
	return shortID(id)
}

func gpuKey(node string, idx int) string { return fmt.Sprintf("%s:%d", node, idx) }

// reportAcc sums one row: the GPUs' granted spans, and their whole window.
type reportAcc struct {
	row            ReportRow
	granted, whole measure
	reservedUnused float64 // seconds
}

func (a *reportAcc) result() ReportRow {
	r := a.row
	g := a.granted
	r.GPUHoursGranted = g.granted / 3600
	r.GPUHoursUsed = g.used / 3600
	r.IdleGrantedHours = g.idle / 3600
	r.UnmeasuredHours = max(0, g.granted-g.measured) / 3600
	r.ReservedUnusedHours = a.reservedUnused / 3600
	r.EnergyKWh = (g.counterJ + g.powerJ) / joulesPerKWh
	r.EnergyTotalKWh = (a.whole.counterJ + a.whole.powerJ) / joulesPerKWh
	r.EnergySource = energySource(g.counterJ+a.whole.counterJ, g.powerJ+a.whole.powerJ)
	return r
}

func energySource(counterJ, powerJ float64) string {
	switch {
	case counterJ > 0 && powerJ > 0:
		return EnergyMixed
	case counterJ > 0:
		return EnergyCounter
	case powerJ > 0:
		return EnergyPower
	}
	return ""
}
