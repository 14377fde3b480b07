package app

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/schema"
)

// shareSuggestion is the GPU share that spec's previous run would have
// fit, from its measured peak (jobs.SuggestShare), or nil: where spec asks
// a share, MIG, more than one GPU or given GPUs already, where this member
// has run no such job to its end on one whole GPU, or where its machine
// kept no reading of that run.
//
// A previous run is one this machine launched for its member (the last
// maxLaunches it remembers: a bounded read, whatever job records the
// pool's machines hold), its record's owner proof checked, ended, of the
// same name (spec.Name given) or the same image and command, the latest of
// them; removed ones count (the record stays). Its peak is
// the highest memory used and SM busy of its GPU over its run, as its
// machine recorded them: the GPU was the job's alone.
func (r *Reader) shareSuggestion(ctx context.Context, spec jobs.Spec, nodes []Node) *jobs.ShareSuggestion {
	if spec.GPUShare != 0 || spec.MIGProfile != "" || len(spec.MIGIDs) > 0 || len(spec.GPUIDs) > 0 || spec.GPUs > 1 || asksCluster(spec) {
		return nil
	}
	prev, ok := r.previousRun(ctx, spec, nodes)
	if !ok {
		return nil
	}
	from, to := *prev.Started, *prev.Finished
	pts, err := r.history.Series(ctx, prev.Node, history.Choose(from, to, r.now()), from, to.Add(time.Second))
	if err != nil {
		return nil
	}
	mem, util, ok := history.Peak(pts, prev.GPUIndexes)
	if !ok {
		return nil
	}
	s, ok := jobs.SuggestShare(mem, gpuMemOf(nodes, prev.Node, prev.GPUIndexes[0]), util)
	if !ok {
		return nil
	}
	return &s
}

// maxLaunches bounds the launches this member's machine remembers for
// suggestions: the plan reads at most that many job records, whatever
// the pool's machines hold.
const maxLaunches = 64

// launchRef is one launch this member made: where, and the job's ID.
type launchRef struct {
	Node string `json:"node"`
	Job  string `json:"job"`
}

// rememberLaunch keeps j among this member's latest launches (a local
// setting: the plan's suggestion reads these records alone, never every
// job record of the pool, which any machine could flood). A failure to
// keep it loses a suggestion, nothing else.
func (s *Service) rememberLaunch(ctx context.Context, j jobs.Job) {
	refs := s.launches(ctx)
	refs = slices.DeleteFunc(refs, func(r launchRef) bool { return r.Node == j.Node && r.Job == j.ID })
	refs = append(refs, launchRef{Node: j.Node, Job: j.ID})
	if len(refs) > maxLaunches {
		refs = refs[len(refs)-maxLaunches:]
	}
	if b, err := json.Marshal(refs); err == nil {
		s.db.SetSetting(ctx, schema.SettingLaunches, string(b))
	}
}

// launches are this member's latest launches, oldest first.
func (r *Reader) launches(ctx context.Context) []launchRef {
	v, ok, err := r.db.Setting(ctx, schema.SettingLaunches)
	var refs []launchRef
	if err != nil || !ok || json.Unmarshal([]byte(v), &refs) != nil {
		return nil
	}
	return refs[max(0, len(refs)-maxLaunches):]
}

// previousRun is the latest ended run of spec by this member on one whole
// GPU (see shareSuggestion), among the launches this machine remembers.
func (r *Reader) previousRun(ctx context.Context, spec jobs.Spec, nodes []Node) (Job, bool) {
	names := map[string]string{}
	for _, n := range nodes {
		names[n.ID] = n.Name
	}
	var best Job
	found := false
	for _, ref := range r.launches(ctx) {
		if _, ok := names[ref.Node]; !ok {
			continue // a machine no longer in the pool
		}
		rec, ok, err := r.db.Latest(ctx, ref.Node, KindJob, ref.Job)
		var j jobs.Job
		if err != nil || !ok || json.Unmarshal(rec.Data, &j) != nil || j.ID != ref.Job {
			continue
		}
		j.Node = rec.Origin
		if !sameRun(spec, j) || (found && !j.Finished.After(*best.Finished)) {
			continue
		}
		v := Job{Job: j}
		v.attribute(r.proofRule(rec, j, names), names)
		if v.OwnerVerified && v.Owner == r.self.ID {
			best, found = v, true
		}
	}
	return best, found
}

// sameRun says whether j is an ended run of spec on one whole GPU.
func sameRun(spec jobs.Spec, j jobs.Job) bool {
	switch {
	case j.Started == nil || j.Finished == nil || !j.Finished.After(*j.Started) || active(j.State):
		return false
	case len(j.GPUIndexes) != 1 || j.Spec.GPUShare != 0 || len(j.Spec.MIGIDs) > 0 || j.Spec.MIGProfile != "":
		return false
	case spec.Name != "":
		return j.Name == spec.Name
	}
	return !j.CmdWithheld && j.Spec.Name == "" && j.Image == spec.Image && slices.Equal(j.Spec.Cmd, spec.Cmd)
}

// gpuMemOf is the memory of GPU index of node, 0 when unknown.
func gpuMemOf(nodes []Node, node string, index int) uint64 {
	for _, n := range nodes {
		if n.ID != node {
			continue
		}
		for _, g := range n.GPUs {
			if g.Index == index {
				return g.MemTotalBytes
			}
		}
	}
	return 0
}
