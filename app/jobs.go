package app

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// KindJob is the replica record of one job, written by the node that runs
// it (key: the job ID; data: jobs.Job).
const KindJob = schema.KindJob

// NodeCaller reaches a node's agent API (this machine's included) over the
// pool's transport, pinned to the node's device ID.
type NodeCaller interface {
	NodeClient(ctx context.Context, id string) (*http.Client, error)
}

// Jobs lists jobs of every node from the replica, newest first: active ones,
// or all with all set. A job of an offline node is marked stale. The active
// ones are read through the store's index of job states: the records of
// ended jobs, however many a member holds, are not read.
func (r *Reader) Jobs(ctx context.Context, all bool) ([]Job, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	online := map[string]bool{}
	w := newWeights(nodes)
	now := r.now()
	for _, n := range nodes {
		names[n.ID], online[n.ID] = n.Name, n.Online
	}
	people, err := r.peopleNames(ctx, nodes) // owners: those removed since keep their name
	if err != nil {
		return nil, err
	}
	recs, err := r.jobRecords(ctx, nodes, all)
	if err != nil {
		return nil, err
	}
	out := []Job{}
	for _, rec := range recs {
		if _, ok := names[rec.Origin]; !ok {
			continue // a machine no longer in the pool
		}
		var j jobs.Job
		if json.Unmarshal(rec.Data, &j) != nil || j.ID == "" {
			continue // a malformed record from a peer: skip it
		}
		if j.Removed || (!all && !active(j.State)) {
			continue
		}
		j.Node = rec.Origin // a job is its origin's, whatever node the record names
		v := Job{Job: j, NodeName: names[rec.Origin], Stale: !online[rec.Origin], ImageLoadedByName: loaderName(people, j.ImageLoadedBy)}
		v.attribute(r.proofRule(rec, j, people), people)
		v.weigh(w, now)
		out = append(out, v)
	}
	out = withoutHandedOver(out)
	sort.SliceStable(out, func(i, k int) bool { return out[i].Created.After(out[k].Created) })
	return out, nil
}

// withoutHandedOver leaves out the home's record of a job offered to a
// machine whose record of it is listed: between the machine's acceptance
// and its home hearing of it, the job is shown once, where it runs.
func withoutHandedOver(js []Job) []Job {
	at := map[[3]string]bool{} // job ID, node, home: a record handed over from its home
	for _, j := range js {
		if j.Home != "" && j.Home != j.Node {
			at[[3]string{j.ID, j.Node, j.Home}] = true
		}
	}
	if len(at) == 0 {
		return js
	}
	return slices.DeleteFunc(js, func(j Job) bool { return j.OfferedTo != "" && at[[3]string{j.ID, j.OfferedTo, j.Node}] })
}

// activeStates are the states of the jobs Jobs lists without all.
var activeStates = schema.ActiveJobStates

// jobRecords reads the job records of nodes: every one with all, else
// those whose state is active.
func (r *Reader) jobRecords(ctx context.Context, nodes []Node, all bool) ([]store.Record, error) {
	if !all {
		return r.db.JobsInState(ctx, activeStates...)
	}
	var out []store.Record
	for _, n := range nodes {
		recs, err := r.db.Range(ctx, n.ID, KindJob, time.Time{}, time.Now().Add(24*time.Hour))
		if err != nil {
			return nil, fmt.Errorf("read jobs of %s: %w", n.Name, err)
		}
		out = append(out, recs...)
	}
	return out, nil
}

func active(st jobs.State) bool { return slices.Contains(activeStates, string(st)) }

func ownerName(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return shortID(id)
}

// JobRef is the reference that names j alone: its node's device ID and its
// ID ("NODE/ID"). A job is known by both: two nodes may use one ID.
func JobRef(j jobs.Job) string { return j.Node + "/" + j.ID }

// Job finds one job by ID, unique ID prefix, or name, optionally after its
// node ("NODE/ID", the node by name, device ID or its prefix). A reference
// that fits jobs of several nodes (an ID another node reused) names none:
// the error asks for NODE/ID.
func (r *Reader) Job(ctx context.Context, ref string) (Job, error) {
	all, err := r.Jobs(ctx, true)
	if err != nil {
		return Job{}, err
	}
	if node, id, ok := strings.Cut(ref, "/"); ok {
		n, err := r.NodeByRef(ctx, node)
		if err != nil {
			return Job{}, fmt.Errorf("job %q: %w", ref, err)
		}
		all = slices.DeleteFunc(all, func(j Job) bool { return j.Node != n.ID })
		ref = id
	}
	var exact, match []Job
	for _, j := range all {
		switch {
		case j.ID == ref:
			exact = append(exact, j)
		case strings.HasPrefix(j.ID, ref) || j.Name == ref:
			match = append(match, j)
		}
	}
	if len(exact) > 0 {
		match = exact
	}
	if moved := slices.DeleteFunc(slices.Clone(match), func(j Job) bool { return j.State == jobs.Moved }); len(moved) > 0 {
		match = moved // a job handed over is the one on the machine it went to
	}
	switch len(match) {
	case 0:
		return Job{}, fmt.Errorf("%w: no job %q", ErrNotFound, ref)
	case 1:
		return match[0], nil
	}
	return Job{}, ambiguousJob(ref, match)
}

// ambiguousJob is the refusal of a reference that fits several jobs.
func ambiguousJob(ref string, match []Job) error {
	nodes := map[string]bool{}
	var names []string
	for _, j := range match {
		if !nodes[j.Node] {
			nodes[j.Node] = true
			names = append(names, j.NodeName)
		}
	}
	if len(nodes) == 1 {
		return fmt.Errorf("%w: %q matches %d jobs: give more of the job ID", ErrInvalid, ref, len(match))
	}
	return fmt.Errorf("%w: %q matches jobs on %d machines (%s): name one as NODE/ID, such as %s/%s",
		ErrInvalid, ref, len(nodes), strings.Join(names, ", "), match[0].NodeName, match[0].ID)
}

// NodeByRef resolves a node by name, ID or ID prefix.
func (r *Reader) NodeByRef(ctx context.Context, ref string) (Node, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return Node{}, err
	}
	var match []Node
	for _, n := range nodes {
		if n.ID == ref || n.Name == ref {
			return n, nil
		}
		if len(ref) >= 4 && strings.HasPrefix(strings.ReplaceAll(n.ID, "-", ""), strings.ToUpper(strings.ReplaceAll(ref, "-", ""))) {
			match = append(match, n)
		}
	}
	if len(match) == 1 {
		return match[0], nil
	}
	if len(match) > 1 {
		return Node{}, fmt.Errorf("%w: %q matches %d machines", ErrInvalid, ref, len(match))
	}
	return Node{}, fmt.Errorf("%w: no machine %q in the pool", ErrNotFound, ref)
}

// Plan picks where req would run: the named node, or the online node with
// enough free GPUs that match, least loaded first; and says what every
// machine of the pool has for it. An empty image plans too.
func (s *Service) Plan(ctx context.Context, req LaunchRequest) (Plan, error) {
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return Plan{}, err
	}
	active, err := s.Jobs(ctx, false)
	if err != nil {
		return Plan{}, err
	}
	var named *Node
	if req.Node != "" {
		n, err := s.NodeByRef(ctx, req.Node)
		if err != nil {
			return Plan{}, err
		}
		named = &n
	}
	p := planAt(nodes, named, req.Spec, active, s.now(), s.self.ID)
	if names, err := memberNames(ctx, s.db); err == nil {
		nameReservers(&p, names) // the IDs stand without names
	}
	p.Suggestion = s.shareSuggestion(ctx, req.Spec, nodes)
	return p, nil
}

// sessionGrace is how long a launch on a machine named while it looks
// offline waits for it: right after that machine restarts, or this one
// joins, its session comes back within a few seconds (as a stop's or a
// copy's does).
const sessionGrace = 5 * time.Second

// planNamed is Plan; a machine named (req.Node) that looks offline is
// given sessionGrace to come back before the plan says so.
func (s *Service) planNamed(ctx context.Context, req LaunchRequest) (Plan, error) {
	p, err := s.Plan(ctx, req)
	for end := time.Now().Add(sessionGrace); err == nil && !p.Fits && req.Node != "" && time.Now().Before(end); {
		if n, err := s.NodeByRef(ctx, req.Node); err != nil || n.Online {
			break
		}
		select {
		case <-ctx.Done():
			return p, nil
		case <-time.After(100 * time.Millisecond):
		}
		p, err = s.Plan(ctx, req)
	}
	return p, err
}

// plan is the placement rule: where spec runs among nodes (on named when
// set), given the active jobs of the pool.
func plan(nodes []Node, named *Node, spec jobs.Spec, active []Job) Plan {
	return planAt(nodes, named, spec, active, time.Now(), "")
}

// planAt is plan at time at for member (device ID) who: grants then in
// force, reservations then ahead (who's own let who's jobs in).
func planAt(nodes []Node, named *Node, spec jobs.Spec, active []Job, at time.Time, who string) Plan {
	p := Plan{Images: []string{}, Nodes: make([]NodePlan, 0, len(nodes))}
	var best *NodePlan
	var bestLoad, leastLoad float64
	var bestWeight placeWeight
	var refused []refusal
	for _, n := range nodes {
		np := planFor(n, spec, active, at, who)
		p.Nodes = append(p.Nodes, np)
		switch {
		case named != nil || !n.Online:
		case n.Cluster != nil && !asksCluster(spec):
			refused = append(refused, refusal{name: n.Name, why: "a Slurm cluster, picked only when named (--node " + n.Name + ") or for a partition, a time limit or several nodes"})
		case !np.Fits:
			refused = append(refused, refusalOf(n, np))
		default:
			if best == nil || load(n) < leastLoad {
				leastLoad = load(n)
			}
			if w := weigh(n, np); best == nil || placedBetter(w, load(n), bestWeight, bestLoad) {
				best, bestLoad, bestWeight = &np, load(n), w
			}
		}
	}
	switch {
	case named != nil:
		p.NodePlan = planFor(*named, spec, active, at, who)
	case best != nil && best.Cluster != nil:
		p.NodePlan = *best
		p.Reason = best.NodeName + ": " + best.Reason
	case best != nil && bestLoad > leastLoad:
		p.NodePlan = *best
		p.Reason = fmt.Sprintf("%s has %s, cooler or better NVLinked than those of less loaded machines", best.NodeName, count(best.Free, "free GPU"))
		if _, weighed, ok := strings.Cut(best.Placement, "; "); ok {
			p.Reason += "; " + weighed
		}
	case best != nil:
		p.NodePlan = *best
		p.Reason = fmt.Sprintf("%s has %s and is the least loaded that fits", best.NodeName, count(best.Free, "free GPU"))
		if _, weighed, ok := strings.Cut(best.Placement, "; "); ok {
			p.Reason += "; " + weighed
		}
	default:
		p.NodePlan = NodePlan{Reason: noFitReason(refused), GPUs: []PlanGPU{}}
	}
	return p
}

// noContainers says why n runs no containers. Every node record says
// whether its machine runs them (and why not), so a machine with none has
// not been heard from yet: it joined moments ago, its record on its way.
func noContainers(n Node) string {
	if n.ContainersError != "" {
		return "cannot run containers: " + n.ContainersError
	}
	return "has not said yet whether it can run containers (it joined moments ago: its node record has not arrived); try again in a few seconds"
}

// planFor says whether spec fits on n at at, given the active jobs of the
// pool, and the state of each of n's GPUs: alloc.Fit decides, on n's
// view (viewOf), as n's ledger would.
func planFor(n Node, spec jobs.Spec, active []Job, at time.Time, who string) NodePlan {
	if n.Cluster != nil {
		return planCluster(n, spec, at)
	}
	if spec.GPUShare >= 1 && spec.GPUs == 0 {
		spec.GPUs = 1 // a share of 1 is a whole GPU, as the machine grants it
	}
	p := NodePlan{Node: n.ID, NodeName: n.Name}
	units, grants := viewOf(n, active)
	var busy []string
	p.GPUs, busy = planGPUs(n, units, grants, spec, active, at, who)
	free := map[int]bool{} // index -> nothing holds it
	for _, g := range p.GPUs {
		if g.State == GPUFree || g.State == GPUSmall {
			free[g.Index] = true
			p.Free++
		}
	}
	if !n.Online {
		p.Reason = n.Name + " is offline"
		return p
	}
	if why := notCluster(n, spec); why != "" {
		p.Reason = why
		return p
	}
	if !n.Containers {
		p.Reason = noContainers(n)
		return p
	}
	if err := shareMemFits(n, spec); err != nil {
		p.Reason = err.Error()
		return p
	}
	busyText := ""
	if len(busy) > 0 {
		busyText = " (busy: " + strings.Join(busy, "; ") + ")"
	}
	r := planRequest(n, spec, who)
	d, placement := fitNode(n, units, grants, r, at)
	if len(spec.MIGIDs) > 0 || spec.MIGProfile != "" || r.Share > 0 {
		p.Fits, p.Reason = fitsUnits(spec, r, d, units, active)
		return p
	}
	p.Fits, p.Reason = fits(n, p, spec, free, busyText)
	if p.Fits && d.Fits && spec.GPUs > 0 && len(spec.GPUIDs) == 0 {
		for _, u := range d.Units {
			p.Picked = append(p.Picked, u.Index)
		}
		p.Placement = placement
		if note := socketNote(n, p.Picked); note != "" {
			p.Placement += "; " + note
		}
		if _, weighed, ok := strings.Cut(p.Placement, "; "); ok {
			p.Reason += "; " + weighed
		}
	}
	if note := socketNote(n, spec.GPUIDs); p.Fits && note != "" { // the GPUs asked by index
		p.Placement = "GPUs " + intList(spec.GPUIDs) + "; " + note
		p.Reason += "; " + note
	}
	return p
}

// fits decides whether spec fits on the online node n whose GPUs p plans
// (free: the indexes nothing holds), and says why.
func fits(n Node, p NodePlan, spec jobs.Spec, free map[int]bool, busyText string) (bool, string) {
	reason := ""
	want := spec.GPUs
	if spec.GPUShare > 0 {
		want = 1 // a share is of one GPU (without its grants record, a free one)
	}
	switch {
	case len(spec.GPUIDs) > 0:
		for _, i := range spec.GPUIDs {
			if g := faulty(p, i); g != nil {
				// Named as the machine names it: the fault, never queued.
				return false, fmt.Sprintf("refused by rule %q: gpu %d %s", "quarantined GPU", i, g.Reason)
			}
			if !free[i] {
				reason = fmt.Sprintf("GPU %d is busy or absent%s", i, busyText)
				if !spec.Queue {
					return false, reason
				}
			}
		}
	case want > len(n.GPUs):
		return false, fmt.Sprintf("has %s, %d asked", count(len(n.GPUs), "GPU"), want)
	case want > 0:
		fit := 0
		for _, g := range p.GPUs {
			if g.State == GPUFree {
				fit++
			}
		}
		if fit < want {
			reason = fmt.Sprintf("%d of %s free that match%s", fit, count(len(n.GPUs), "GPU"), busyText)
			if !spec.Queue {
				return false, reason
			}
			reason += "; the job will wait in the queue"
		}
	}
	switch {
	case reason != "":
	case want == 0 && len(spec.GPUIDs) == 0:
		reason = fmt.Sprintf("no GPU asked (%d of %d free)", p.Free, len(n.GPUs))
	default:
		reason = fmt.Sprintf("%d of %s free", p.Free, count(len(n.GPUs), "GPU"))
	}
	return true, reason
}

// faulty is GPU index of p when it is quarantined or lost, else nil.
func faulty(p NodePlan, index int) *PlanGPU {
	for k := range p.GPUs {
		if g := &p.GPUs[k]; g.Index == index && g.State == GPUFaulty {
			return g
		}
	}
	return nil
}

// placeWeight is what the GPUs a plan picked on a machine cost a job
// (jobs.Weigh): hot or throttling GPUs, and pairs without NVLink.
type placeWeight struct{ hot, unlinked int }

// weigh is the placeWeight of the GPUs np picked on n.
func weigh(n Node, np NodePlan) placeWeight {
	var set []jobs.Candidate
	for _, g := range n.GPUs {
		if slices.Contains(np.Picked, g.Index) {
			set = append(set, candidate(g))
		}
	}
	var w placeWeight
	w.hot, w.unlinked = jobs.Weigh(set)
	return w
}

// placedBetter says whether a job placed as a (on a machine loaded aLoad)
// gets fewer hot or throttling GPUs, or else fewer pairs without NVLink,
// than placed as b, or else as good on a less loaded machine.
func placedBetter(a placeWeight, aLoad float64, b placeWeight, bLoad float64) bool {
	if a.hot != b.hot {
		return a.hot < b.hot
	}
	if a.unlinked != b.unlinked {
		return a.unlinked < b.unlinked
	}
	return aLoad < bLoad
}

// load is how busy a node is: mean GPU utilization, or CPU without GPUs.
func load(n Node) float64 {
	if len(n.GPUs) == 0 {
		if n.Host != nil {
			return n.Host.CPUPercent
		}
		return 100
	}
	var sum float64
	for _, g := range n.GPUs {
		sum += g.UtilPercent
	}
	return sum / float64(len(n.GPUs))
}

// Launch runs req on the node Plan picks and returns the node's record.
func (s *Service) Launch(ctx context.Context, req LaunchRequest) (Job, error) {
	p, err := s.planNamed(ctx, req)
	if err != nil {
		return Job{}, err
	}
	switch {
	case req.Spec.Image == "" && p.Cluster == nil:
		return Job{}, fmt.Errorf("%w: an image is required (command jobs without one run on a Slurm cluster only)", ErrInvalid)
	case req.Spec.Image == "" && len(req.Spec.Cmd) == 0:
		return Job{}, fmt.Errorf("%w: a command job needs a command (labpool run --node %s -- CMD...)", ErrInvalid, p.NodeName)
	}
	if !p.Fits {
		return Job{}, &APIError{Status: http.StatusConflict, Code: "no_fit", Message: p.Reason}
	}
	spec := req.Spec
	if req.Node == "" && spec.Queue {
		spec = poolWide(spec) // no machine named: it may start on whichever fits first
	}
	j, err := s.launchOn(ctx, p.Node, spec)
	if err != nil {
		return Job{}, err
	}
	s.rememberLaunch(ctx, j)
	out := Job{Job: j, NodeName: p.NodeName, Placement: p.Reason}
	out.attribute(ruleOf(j.VerifyOwner()), map[string]string{s.self.ID: s.self.Name})
	if j.ImageLoadedBy != "" {
		names, _ := s.peopleNames(ctx, nil) // no names: the short ID
		out.ImageLoadedByName = loaderName(names, j.ImageLoadedBy)
	}
	return out, nil
}

// loaderName names who loaded a job's image ("" for none).
func loaderName(names map[string]string, id string) string {
	if id == "" {
		return ""
	}
	return ownerName(names, id)
}

// JobView finds one job (see Reader.Job) and, while its node is online,
// reads it as the node shows it to this device: the replica withholds
// every job's command line, which a job's owner, admins and owners may
// read (GET /api/v1/jobs/{id}).
func (s *Service) JobView(ctx context.Context, ref string) (Job, error) {
	j, err := s.Job(ctx, ref)
	if err != nil || !j.CmdWithheld || j.Stale {
		return j, err
	}
	full, err := jobs.Client{Conn: s.Peer(j.Node)}.Get(ctx, j.ID)
	if err != nil || full.ID != j.ID {
		return j, nil // the replica's record, the command line withheld
	}
	gw, gs := j.GPUWeight, j.GPUSeconds
	j.Job = full
	j.GPUWeight, j.GPUSeconds = gw, gs // weighed as Jobs weighs them
	return j, nil
}

// StopJob stops a job on its node.
func (s *Service) StopJob(ctx context.Context, ref string) (Job, error) {
	j, err := s.Job(ctx, ref)
	if err != nil {
		return Job{}, err
	}
	// Stopping twice does what stopping once does: sent again if its
	// connection turns out to be dead (the machine's agent restarted).
	ctx = transport.SafeToRetry(ctx)
	out, err := jobs.Client{Conn: s.Peer(j.Node)}.Stop(ctx, j.ID)
	if err != nil {
		return Job{}, err
	}
	j.Job = out
	return j, nil
}

// RemoveRequest names a job to remove. Force removes a job that still runs
// (stopping it, its work lost); without it the node refuses one.
type RemoveRequest struct {
	Ref   string `json:"ref"`
	Force bool   `json:"force,omitempty"`
}

// RemoveJob removes a job's container on its node; the node refuses a
// running job unless req.Force.
func (s *Service) RemoveJob(ctx context.Context, req RemoveRequest) error {
	j, err := s.Job(ctx, req.Ref)
	if err != nil {
		return err
	}
	return jobs.Client{Conn: s.Peer(j.Node)}.Remove(ctx, j.ID, req.Force)
}

// JobStats returns a job's resource use now.
func (s *Service) JobStats(ctx context.Context, ref string) (jobs.Stats, error) {
	var st jobs.Stats
	j, err := s.Job(ctx, ref)
	if err != nil {
		return st, err
	}
	return jobs.Client{Conn: s.Peer(j.Node)}.Stats(ctx, j.ID)
}

// Logs streams a job's logs from its node.
func (s *Service) Logs(ctx context.Context, ref string, follow bool, tail int) (io.ReadCloser, error) {
	j, err := s.Job(ctx, ref)
	if err != nil {
		return nil, err
	}
	return jobs.Client{Conn: s.Peer(j.Node)}.Logs(ctx, j.ID, follow, tail)
}

// Images lists a node's images.
func (s *Service) Images(ctx context.Context, node string) ([]containers.Image, error) {
	n, err := s.nodeOrSelf(ctx, node)
	if err != nil {
		return nil, err
	}
	imgs, err := containers.ImageClient{Conn: s.Peer(n)}.Images(ctx)
	if err != nil {
		return nil, err
	}
	imgs = orEmpty(imgs)
	names, err := s.peopleNames(ctx, nil)
	if err != nil {
		return nil, err
	}
	for i := range imgs {
		imgs[i].LoadedByName = ""
		if by := imgs[i].LoadedBy; by != "" {
			imgs[i].LoadedByName = ownerName(names, by)
		}
	}
	return imgs, nil
}

// LoadImage sends an image archive to a node; the reply streams progress.
// An existing tag that names another image is never moved unless force
// (which only the machine's owner may ask).
func (s *Service) LoadImage(ctx context.Context, node string, archive io.Reader, force bool) (io.ReadCloser, error) {
	n, err := s.nodeOrSelf(ctx, node)
	if err != nil {
		return nil, err
	}
	return containers.ImageClient{Conn: s.Peer(n)}.Load(ctx, archive, force)
}

// PullImage makes a node pull an image; the reply streams progress.
func (s *Service) PullImage(ctx context.Context, req PullRequest) (io.ReadCloser, error) {
	if req.Ref == "" {
		return nil, fmt.Errorf("%w: an image reference is required", ErrInvalid)
	}
	n, err := s.nodeOrSelf(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	return containers.ImageClient{Conn: s.Peer(n)}.Pull(ctx, req.Ref, req.Force)
}

func (s *Service) nodeOrSelf(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		return s.self.ID, nil
	}
	n, err := s.NodeByRef(ctx, ref)
	return n.ID, err
}

// shareMemFits refuses a share whose memory cap is over n's largest GPU's
// memory, naming the rule as n's ledger does (jobs.ValidateShareMem): no
// GPU there could ever hold it, which is not "busy".
func shareMemFits(n Node, spec jobs.Spec) error {
	if spec.GPUShare <= 0 || spec.GPUShare >= 1 || len(n.GPUs) == 0 {
		return nil
	}
	stats := make([]gpu.Stats, 0, len(n.GPUs))
	for _, g := range n.GPUs {
		stats = append(stats, gpu.Stats{Index: g.Index, Name: g.Name, MemTotalBytes: g.MemTotalBytes})
	}
	return jobs.ValidateShareMem(spec, stats)
}
