package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
)

// Report groupings (ReportRequest.By). By member, a row is a person, the
// sum of their devices; by device, a row is one device of a person.
const (
	ReportByMember = "member"
	ReportByDevice = "device"
	ReportByNode   = "node"
	ReportByGPU    = "gpu"
	ReportByJob    = "job"
)

// Energy sources of a ReportRow (EnergySource).
const (
	EnergyCounter = "counter" // NVML's total energy counter, differences between readings
	EnergyPower   = "power"   // power draw integrated over time (no counter, or it was reset)
	EnergyMixed   = "mixed"   // some of each
)

// ReportRequest asks for the report of a window: the Since seconds that end
// at Until (unix seconds; 0 = now), grouped By member (a person), device
// (a person's device), node, gpu or job.
type ReportRequest struct {
	Since int    `json:"since"`
	Until int64  `json:"until,omitempty"`
	By    string `json:"by"`
}

// Report says where the pool's GPU hours and energy went over a window.
// Every member of the pool may read it: it names jobs, owners and machines
// (what viewers see anyway), never a job's environment or command.
type Report struct {
	Since time.Time   `json:"since"`
	Until time.Time   `json:"until"`
	By    string      `json:"by"`
	Rows  []ReportRow `json:"rows"` // most GPU hours granted first
	// Totals sums the rows; its EnergyTotalKWh is every GPU's energy over
	// the window, granted or not.
	Totals ReportRow `json:"totals"`
	// Columns says which holder kinds each figure counts (ReportColumns).
	Columns []ReportColumn `json:"columns"`
	// Adjusted lists job records of the window the report counted less of
	// than they claim, each with the rule that cut it (at most 100 of
	// them; AdjustedCount counts them all).
	Adjusted      []ReportAdjustment `json:"adjusted"`
	AdjustedCount int                `json:"adjusted_count"`
	// StepSeconds is the coarsest resolution of the samples the figures
	// come from (1, 60, 900 or 10800): each part of the window is read from
	// the finest history tier that holds it (the last hour at 1 s, the
	// last week at 1 min, the last year at 15 min).
	StepSeconds int `json:"step_seconds"`
}

// ReportRow is one person, device, machine, GPU or job of a Report. Hours
// are GPU hours: two GPUs granted for an hour are 2.
type ReportRow struct {
	// Key is the person's ID (the device ID of their first device), the
	// device's or machine's device ID, "NODEID:INDEX" for a GPU, the job's
	// ID; Label is its name for people: "alice", "alice (alice-laptop)"
	// by device.
	Key   string `json:"key"`
	Label string `json:"label"`
	// GPUHoursGranted is the time GPUs were granted to jobs (a job holds
	// its GPUs from its start to its end; a running one to the window's end).
	GPUHoursGranted float64 `json:"gpu_hours_granted"`
	// GPUHoursUsed weighs the granted time by utilization (an hour at 50%
	// is half an hour used).
	GPUHoursUsed float64 `json:"gpu_hours_used"`
	// IdleGrantedHours is granted time with utilization under 5%.
	IdleGrantedHours float64 `json:"idle_granted_hours"`
	// UnmeasuredHours is granted time with no sample (the machine was
	// off, or its history is gone): neither used nor idle.
	UnmeasuredHours float64 `json:"unmeasured_hours"`
	// ReservedUnusedHours is GPU time reserved (alloc.Reservation grants)
	// that the reservation's member's own jobs did not use on those GPUs:
	// kept from everyone else, charged to the member, apart from
	// GPUHoursGranted. By job, each reservation is a row of its own.
	ReservedUnusedHours float64 `json:"reserved_unused_hours"`
	// EnergyKWh is what the granted GPUs drew while granted.
	EnergyKWh float64 `json:"energy_kwh"`
	// EnergyTotalKWh is what the row's GPUs drew over the whole window,
	// granted or not: node and gpu rows, and totals (0 in member and job
	// rows).
	EnergyTotalKWh float64 `json:"energy_total_kwh"`
	// EnergySource says where the energy figures come from: "counter",
	// "power", "mixed", or "" when there was nothing to measure.
	EnergySource string `json:"energy_source"`
}

// Holder kinds the report's figures count (ReportColumn.Includes).
const (
	HoldsJobs         = "jobs"              // labpool jobs, whole GPUs
	HoldsShares       = "shares (fraction)" // a GPU share counts its fraction
	HoldsMIG          = "MIG (fraction)"    // a MIG instance counts its slices over its GPU's
	HoldsClusterJobs  = "cluster jobs"      // Slurm jobs: their GPUs × time held
	HoldsReservations = "reservations"      // reserved and not used by the member's own jobs
)

// ReportColumn says which holder kinds one figure of a ReportRow counts.
type ReportColumn struct {
	Field    string   `json:"field"`    // the ReportRow field, as JSON names it
	Title    string   `json:"title"`    // as the CLI and the UI head it
	Includes []string `json:"includes"` // holder kinds (Holds*)
}

// ReportColumns are the report's figures and what each counts.
func ReportColumns() []ReportColumn {
	held := []string{HoldsJobs, HoldsShares, HoldsMIG, HoldsClusterJobs}
	return []ReportColumn{
		{Field: "gpu_hours_granted", Title: "GPU-h", Includes: held},
		{Field: "gpu_hours_used", Title: "used", Includes: held},
		{Field: "reserved_unused_hours", Title: "reserved-unused", Includes: []string{HoldsReservations}},
	}
}

// ReportLegend is a line that says what ReportColumns says: "GPU-h: jobs,
// shares (fraction), MIG (fraction), cluster jobs; reserved-unused:
// reservations".
func ReportLegend(cols []ReportColumn) string {
	var parts []string
	for _, c := range cols {
		if c.Field == "gpu_hours_used" {
			continue // counts what GPU-h does, weighed by utilization
		}
		parts = append(parts, c.Title+": "+strings.Join(c.Includes, ", "))
	}
	return strings.Join(parts, "; ")
}

// maxReportSeconds is the longest window a report covers: as far back as
// history goes.
var maxReportSeconds = int(history.MaxSeriesWindow / time.Second)

// Report computes the pool's report over the window req asks for, from the
// job records and the samples in the replica.
func (r *Reader) Report(ctx context.Context, req ReportRequest) (Report, error) {
	if err := req.check(); err != nil {
		return Report{}, err
	}
	until := r.now()
	if req.Until > 0 {
		until = time.Unix(req.Until, 0)
	}
	in := reportInput{Until: until.UTC(), Since: until.Add(-time.Duration(req.Since) * time.Second).UTC(), By: req.By}
	ids, names, err := r.nodeIDs(ctx)
	if err != nil {
		return Report{}, err
	}
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return Report{}, err
	}
	if in.Owners, err = memberPersons(ctx, r.db); err != nil { // every device the pool admitted, those removed since too
		return Report{}, err
	}
	people := r.withMachineNames(labelsOf(in.Owners), nodes)
	for _, n := range nodes {
		names[n.ID] = n.Name // a machine's own name over its member name
	}
	for id, name := range people {
		if _, ok := names[id]; !ok {
			names[id] = name
		}
	}
	in.weights = newWeights(nodes)
	names[slurmOutside] = "Slurm jobs outside labpool"
	in.Names = names
	var slurmIdx map[string]jobs.Job // the cluster agents' jobs, read once when a hold needs them
	for _, id := range ids {
		if err := r.reportNode(ctx, &in, id, &slurmIdx); err != nil {
			return Report{}, err
		}
	}
	in.Jobs = heldOnNodes(in.Jobs)
	// The full samples (read after the points, so that none is newer),
	// whose counters end the readings. Not history.Latest: it dates the
	// full sample's counters by the newest 1 s record.
	live, err := r.db.LatestByKind(ctx, history.KindLive)
	if err != nil {
		return Report{}, fmt.Errorf("read latest samples: %w", err)
	}
	latest := make(map[string]agent.Sample, len(live))
	for _, rec := range live {
		if sm, err := history.Decode(rec.Data); err == nil {
			latest[rec.Origin] = sm
		}
	}
	in.GPUs = withLive(in.GPUs, latest, in.Until)
	heard, err := r.history.Latest(ctx)
	if err != nil {
		return Report{}, err
	}
	endSilent(in.Jobs, heard, in.Until)
	if r.reservations != nil {
		var adj []ReportAdjustment
		in.reserved, adj = reservedUnused(r.reservations.Reservations(in.Since, in.Until), unitPlaces(nodes, in.weights), in.Jobs, in.Owners, in.Since, in.Until)
		in.adjusted = append(in.adjusted, adj...)
	}
	rep := computeReport(in)
	rep.Columns = ReportColumns()
	rep.StepSeconds = int(in.step / time.Second)
	rep.AdjustedCount = len(in.adjusted)
	rep.Adjusted = append([]ReportAdjustment{}, in.adjusted[:min(len(in.adjusted), maxAdjustments)]...)
	for i := range rep.Adjusted {
		if a := &rep.Adjusted[i]; a.Node != "" {
			a.NodeName = in.name(a.Node)
		}
	}
	return rep, nil
}

func (req ReportRequest) check() error {
	switch req.By {
	case ReportByMember, ReportByDevice, ReportByNode, ReportByGPU, ReportByJob:
	default:
		return fmt.Errorf("%w: by must be member, device, node, gpu or job, not %q", ErrInvalid, req.By)
	}
	if req.Since <= 0 || req.Since > maxReportSeconds {
		return fmt.Errorf("%w: since must be between 1 and %d seconds", ErrInvalid, maxReportSeconds)
	}
	if req.Until < 0 {
		return fmt.Errorf("%w: until must be unix seconds, or 0 for now", ErrInvalid)
	}
	return nil
}

// reportNode adds node's jobs of the window, the Slurm jobs that held its
// GPUs, and its GPUs' samples to in; slurmIdx is read into on first use
// (see slurmGrants).
func (r *Reader) reportNode(ctx context.Context, in *reportInput, node string, slurmIdx *map[string]jobs.Job) error {
	recs, err := r.db.Range(ctx, node, KindJob, time.Time{}, in.Until.Add(24*time.Hour))
	if err != nil {
		return fmt.Errorf("read jobs of %s: %w", shortID(node), err)
	}
	first := len(in.Jobs)
	for _, rec := range recs {
		var j jobs.Job
		if json.Unmarshal(rec.Data, &j) != nil || j.ID == "" || j.Node != node {
			continue // malformed, or a node speaking for another: skip it
		}
		if g, ok := in.grantOf(j); ok {
			g.Owner = verifiedOwner(j, r.proofRule(rec, j, in.Names))
			in.Jobs = append(in.Jobs, g)
		}
	}
	held, err := r.slurmGrants(ctx, node, in.Until, slurmIdx)
	if err != nil {
		return err
	}
	in.Jobs = append(in.Jobs, held...)
	usage, step, err := r.usage(ctx, node, in.Jobs[first:], in.Since, in.Until)
	if err != nil {
		return fmt.Errorf("read history of %s: %w", shortID(node), err)
	}
	in.GPUs = append(in.GPUs, usage...)
	in.step = max(in.step, step)
	return nil
}

// silentAfter is how long a node may go unheard before its running jobs
// are counted only to its last sample.
const silentAfter = time.Minute

// endSilent ends the running jobs of a node whose newest sample (heard,
// by node ID) is more than silentAfter before until at that sample: what
// happened after, the record cannot say.
func endSilent(js []reportJob, heard map[string]agent.Sample, until time.Time) {
	for i := range js {
		j := &js[i]
		if s, ok := heard[j.Node]; ok && j.End.IsZero() && until.Sub(s.Time) > silentAfter {
			j.End = later(s.Time, j.Start)
		}
	}
}

// grantOf is the grant a job record holds: from its start to its end (zero
// while it runs), weighed (weights.of). A job that never started held
// nothing. A claim the weighing cut is kept in in.adjusted when the grant
// reaches into the window.
func (in *reportInput) grantOf(j jobs.Job) (reportJob, bool) {
	if j.Started == nil || len(j.GPUIndexes) == 0 && j.Executor != "slurm" {
		return reportJob{}, false
	}
	h := in.weights.of(j.Node, j)
	if len(h.GPUs) == 0 && h.Cluster == 0 {
		return reportJob{}, false
	}
	g := reportJob{ID: j.ID, Name: j.Name, Node: j.Node, Owner: j.Owner, GPUs: h.GPUs, Weights: h.Weights, Cluster: h.Cluster, Start: *j.Started}
	switch {
	case j.Finished != nil:
		g.End = *j.Finished
	case j.State != jobs.Running && j.State != jobs.Starting:
		g.End = g.Start // ended with no end recorded: count nothing rather than forever
	}
	if g.Name == "" {
		g.Name = shortID(j.ID)
	}
	if h.Adjust != nil && g.Start.Before(in.Until) && (g.End.IsZero() || g.End.After(in.Since)) {
		in.adjusted = append(in.adjusted, *h.Adjust)
	}
	return g, true
}
