package app

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// How much of a GPU a job's grant counts, in Jobs and in the report: the
// one home of that rule. A whole GPU counts 1; a share (Spec.GPUShare, in
// (0, 1)) its fraction; a MIG instance its slices over its GPU's (3g.40gb
// on a 7-slice GPU: 3/7); a job of a Slurm cluster's agent the GPUs it
// asked (GPUs on one node, or GPUs per node × nodes), none of which are
// the agent's own. A record is its node's word, and its spec its
// launcher's: what either claims beyond what a GPU or a cluster holds is
// cut to it, and the report names the rule (ReportAdjustment).

// Rules the report names where it counted less than a record claims.
const (
	// RuleShareRange: a GPU share is a fraction of one GPU, in (0, 1); a
	// record claiming another counts as the whole GPU it names, no more.
	RuleShareRange = "gpu share in (0, 1)"
	// RuleGPUOnce: a job holds each GPU once, however often its record
	// lists it.
	RuleGPUOnce = "each gpu once"
	// RuleMIGSlices: a MIG instance counts at most its whole GPU.
	RuleMIGSlices = "mig slices at most the gpu's"
	// RuleClusterGPUs: a cluster job counts at most the GPUs its cluster's
	// agent says the cluster has.
	RuleClusterGPUs = "cluster job gpus at most the cluster's"
)

// ReportAdjustment is a job record the report counted less of than it
// claims, and the rule that cut it.
type ReportAdjustment struct {
	Node     string `json:"node"` // device ID
	NodeName string `json:"node_name"`
	Job      string `json:"job"`
	Rule     string `json:"rule"`
	Detail   string `json:"detail"` // "share 5 counted as 1 GPU"
}

// maxAdjustments bounds the adjustments a report lists (it counts them all).
const maxAdjustments = 100

// clusterIndex stands, in a reportJob's grant, for a cluster's GPUs.
const clusterIndex = -1

// weights knows what the report and Jobs need to weigh a grant: each
// cluster agent's cluster size and each MIG instance's fraction of its GPU,
// as the nodes last said.
type weights struct {
	clusters map[string]int     // cluster agent's device ID -> its cluster's GPUs
	mig      map[string]migPart // MIG instance UUID -> its place and fraction
	slices   map[string]int     // node ID + ":" + GPU index -> that GPU's MIG slices
}

// newWeights reads what it needs from nodes.
func newWeights(nodes []Node) weights {
	w := weights{clusters: map[string]int{}, mig: map[string]migPart{}, slices: map[string]int{}}
	for _, n := range nodes {
		if n.Cluster != nil {
			w.clusters[n.ID] = clusterSize(n.Cluster)
		}
		for _, g := range n.GPUs {
			total := gpuSlices(g.Name)
			w.slices[gpuKey(n.ID, g.Index)] = total
			if g.MIG == nil {
				continue
			}
			for _, in := range g.MIG.Instances {
				w.mig[in.UUID] = migPart{node: n.ID, index: g.Index, fraction: migFraction(profileOf(in.Name), total)}
			}
		}
	}
	return w
}

// migPart is a MIG instance's GPU and its fraction of it.
type migPart struct {
	node     string
	index    int
	fraction float64
}

// clusterSize is the GPUs a cluster's agent says the cluster has: by type
// over every node, or where that is missing, node by node.
func clusterSize(c *slurm.Cluster) int {
	sum := func(gs []slurm.GPUCount) int {
		n := 0
		for _, g := range gs {
			n += min(max(0, g.Total), math.MaxInt32)
		}
		return n
	}
	byNode := 0
	for _, n := range c.Nodes {
		byNode += sum(n.GPUs)
	}
	return min(max(sum(c.GPUs), byNode), math.MaxInt32)
}

// gpuSlices is how many MIG slices a GPU of this name has: 4 on an A30,
// 7 on every other GPU with MIG (A100, H100, H200, B200).
func gpuSlices(name string) int {
	if strings.Contains(name, "A30") {
		return 4
	}
	return 7
}

// profileOf is the profile in a MIG device's name ("NVIDIA A100-SXM4-40GB
// MIG 3g.20gb" -> "3g.20gb").
func profileOf(name string) string {
	if i := strings.LastIndex(name, " MIG "); i >= 0 {
		return strings.TrimSpace(name[i+len(" MIG "):])
	}
	return name
}

// migFraction is a profile's slices over total (3g.40gb of 7: 3/7); 1
// where the profile names no slices. A profile of more slices than the GPU
// has is over 1 (weights.of cuts it).
func migFraction(profile string, total int) float64 {
	n, err := strconv.Atoi(profile[:strings.IndexFunc(profile+"g", func(r rune) bool { return r < '0' || r > '9' })])
	if err != nil || n <= 0 || total <= 0 {
		return 1
	}
	return float64(n) / float64(total)
}

// clusterGPUs is what a cluster job's spec asks in all: GPUs on one node
// (or GPUs per node), GPUs per node × nodes on several; never below 0,
// and never past what an int holds.
func clusterGPUs(s jobs.Spec) int {
	if s.Nodes <= 1 {
		if s.GPUs > 0 {
			return s.GPUs
		}
		return max(0, s.GPUsPerNode)
	}
	if s.GPUsPerNode <= 0 {
		return 0
	}
	if s.Nodes > math.MaxInt32/s.GPUsPerNode {
		return math.MaxInt32
	}
	return s.Nodes * s.GPUsPerNode
}

// weighed is what a job's record counts: for each GPU it holds (GPUs, by
// index) the fraction of it, or Cluster GPUs of a cluster; and the rule
// that cut a claim, if one did.
type weighed struct {
	GPUs    []int
	Weights []float64 // parallel to GPUs
	Cluster int
	Adjust  *ReportAdjustment
}

// total is how many GPUs it counts in all.
func (h weighed) total() float64 {
	t := float64(h.Cluster)
	for _, w := range h.Weights {
		t += w
	}
	return t
}

// of weighs j, a record of node.
func (w weights) of(node string, j jobs.Job) weighed {
	if j.Executor == "slurm" {
		return w.cluster(node, j)
	}
	h := weighed{GPUs: j.GPUIndexes, Weights: make([]float64, len(j.GPUIndexes))}
	share := 1.0
	if s := j.Spec.GPUShare; s != 0 && s != 1 {
		if s > 0 && s < 1 {
			share = s
		} else {
			h.Adjust = &ReportAdjustment{Node: node, Job: j.ID, Rule: RuleShareRange,
				Detail: fmt.Sprintf("share %v counted as the whole GPU", s)}
		}
	}
	mig := w.migOf(node, j)
	var once dedup[int]
	for i, idx := range j.GPUIndexes {
		f, ok := mig[idx]
		if once.repeat(j.GPUIndexes, i) {
			h.Adjust = &ReportAdjustment{Node: node, Job: j.ID, Rule: RuleGPUOnce,
				Detail: fmt.Sprintf("GPU %d listed again", idx)}
			continue // its weight stays 0
		}
		if !ok {
			f = 1
		} else if f > 1 {
			f = 1
			h.Adjust = &ReportAdjustment{Node: node, Job: j.ID, Rule: RuleMIGSlices,
				Detail: fmt.Sprintf("MIG instances on GPU %d counted as the whole GPU", idx)}
		}
		h.Weights[i] = share * f
	}
	return h
}

// migOf is, per GPU index, the sum of the fractions of j's MIG instances
// on it (nil: the job holds no MIG instance). An instance the node no
// longer lists counts its spec's profile, else its whole GPU.
func (w weights) migOf(node string, j jobs.Job) map[int]float64 {
	var out map[int]float64
	unknown := false
	var once dedup[string]
	for i, u := range j.GPUs {
		if once.repeat(j.GPUs, i) || !strings.HasPrefix(u, "MIG-") {
			continue
		}
		if out == nil {
			out = map[int]float64{}
		}
		if p, ok := w.mig[u]; ok && p.node == node {
			out[p.index] += p.fraction
		} else {
			unknown = true
		}
	}
	if !unknown {
		return out
	}
	for _, idx := range j.GPUIndexes {
		if _, ok := out[idx]; !ok {
			out[idx] = 1
			if j.Spec.MIGProfile != "" {
				out[idx] = migFraction(j.Spec.MIGProfile, w.slices[gpuKey(node, idx)])
			}
		}
	}
	return out
}

// cluster weighs a job a cluster's agent launched through Slurm: the GPUs
// it asked, at most the cluster's.
func (w weights) cluster(node string, j jobs.Job) weighed {
	size, ok := w.clusters[node]
	if !ok {
		return weighed{} // no cluster stands behind this machine
	}
	n := clusterGPUs(j.Spec)
	h := weighed{Cluster: n}
	if n > size {
		h.Cluster = size
		h.Adjust = &ReportAdjustment{Node: node, Job: j.ID, Rule: RuleClusterGPUs,
			Detail: fmt.Sprintf("%s claimed, the cluster has %d", count(n, "GPU"), size)}
	}
	return h
}

// weigh sets v's GPUWeight, and its GPUSeconds to that weight over its
// time held: from its start to its end, or to now while it runs. A record
// that never started, or ended with no end recorded, keeps its node's
// figure.
func (v *Job) weigh(w weights, now time.Time) {
	v.GPUWeight = w.of(v.Node, v.Job).total()
	if v.Started == nil {
		return
	}
	end := now
	switch {
	case v.Finished != nil:
		end = *v.Finished
	case v.State != jobs.Running && v.State != jobs.Starting:
		return
	}
	v.GPUSeconds = v.GPUWeight * max(0, end.Sub(*v.Started).Seconds())
}

// dedup finds the elements of a list that appeared before, asked in order
// (repeat(list, 0), repeat(list, 1), ...): by looking back in a short
// list, with a set in a long one (a peer's record may list many).
type dedup[T comparable] struct{ set map[T]bool }

func (d *dedup[T]) repeat(list []T, i int) bool {
	if len(list) <= 16 {
		return slices.Contains(list[:i], list[i])
	}
	if d.set == nil {
		d.set = make(map[T]bool, len(list))
	}
	if d.set[list[i]] {
		return true
	}
	d.set[list[i]] = true
	return false
}
