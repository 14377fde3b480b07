package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/schema"
)

// SlurmMode says whether the agent stands for a Slurm cluster: its jobs
// are submitted with sbatch, and its node record carries the cluster's
// card (app.NodeRecord.Cluster).
type SlurmMode int

// Slurm modes.
const (
	SlurmOff  SlurmMode = iota // never (the window, labpool web)
	SlurmAuto                  // when sinfo answers and no Docker engine is reachable
	SlurmOn                    // agent --slurm
)

// probeSlurm bounds how long detection waits for sinfo: an unreachable
// controller makes the clients wait their MessageTimeout (10 s).
const probeSlurm = 3 * time.Second

// openSlurm makes the executor of the Slurm cluster this agent stands
// for: Slurm's commands on PATH, configured as for any client (SLURM_CONF
// or Slurm's default). A controller down now is no error: the card says
// so until it answers. nil when the executor cannot start (d.rtErr says
// why).
func (d *Daemon) openSlurm(ctx context.Context) jobs.Executor {
	cfg := slurm.DefaultConfig()
	cfg.StateDir = d.cfg.SlurmDir
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(d.cfg.DataDir, "slurm")
	}
	cfg.Logger = d.log
	cfg.JobUser = d.cfg.SlurmJobUser
	cfg.Private = []string{d.cfg.DataDir} // the key, the socket, the replica
	if exe, err := os.Executable(); err == nil {
		cfg.Opener = []string{exe, slurm.OpenOutputVerb} // sudo runs it as a job's account: see main
	}
	cfg.UserFor = func(owner string) string {
		if d.jobs == nil {
			return ""
		}
		return d.jobs.Policy().SlurmUsers[owner]
	}
	ex, err := slurm.New(ctx, cfg)
	if err != nil {
		d.rtErr = fmt.Errorf("stand for the Slurm cluster: %w", err)
		d.log.Error("this machine stands for no Slurm cluster and runs no jobs", "err", err)
		return nil
	}
	d.rt, d.rtErr = nil, nil
	d.cluster = newClusterCard(ex, clusterEvery)
	d.log.Info("standing for a Slurm cluster: jobs are submitted with sbatch", "state", cfg.StateDir, "job_user", cfg.JobUser)
	return ex
}

// clusterReader reads the cluster this agent stands for, for its card
// (*slurm.Executor).
type clusterReader interface {
	ReadCluster(ctx context.Context) (slurm.Cluster, error)
}

// clusterEvery is how often the card is read when none of labpool's jobs
// changes: each read runs sinfo, scontrol and a squeue of every user,
// about 2% of a core at once a second (BenchmarkSlurmAgentCost). A change
// of a labpool job's state reads it at once, so the card shows labpool's
// jobs as soon as ps does, and the others' within clusterEvery.
const clusterEvery = 5 * time.Second

// clusterCard is the latest card of the cluster this agent stands for;
// the node record's writer publishes it when it changes.
type clusterCard struct {
	src   clusterReader
	every time.Duration  // between reads while labpool's jobs do not change
	jobs  chan struct{}  // 1-buffered: a labpool job's state changed since the last read
	mu    sync.Mutex     // guards card and states
	card  *slurm.Cluster // nil before the first read
	// states is the last state saved of each job (watchJobs).
	states  map[string]jobs.State
	changed chan struct{} // 1-buffered: the card changed since the writer last read it
}

func newClusterCard(src clusterReader, every time.Duration) *clusterCard {
	return &clusterCard{src: src, every: every, jobs: make(chan struct{}, 1),
		states: map[string]jobs.State{}, changed: make(chan struct{}, 1)}
}

// watchJobs returns s, telling the card when a job saved through it
// changed state: the job manager saves each change its executor reports.
func (c *clusterCard) watchJobs(s jobs.Store) jobs.Store { return jobWatch{s, c} }

// jobWatch is a job store that tells the cluster's card of the changes of
// its jobs' states.
type jobWatch struct {
	jobs.Store
	card *clusterCard
}

// SaveJob implements jobs.Store.
func (w jobWatch) SaveJob(j jobs.Job) error {
	err := w.Store.SaveJob(j)
	c := w.card
	c.mu.Lock()
	moved := c.states[j.ID] != j.State
	c.states[j.ID] = j.State
	if j.State == jobs.Exited || j.State == jobs.Failed {
		delete(c.states, j.ID) // its end is the last change worth a read
	}
	c.mu.Unlock()
	if moved {
		select {
		case c.jobs <- struct{}{}:
		default:
		}
	}
	return err
}

// allocation is this machine's grants record: its ledger's units and
// grants, and where it stands for a Slurm cluster, the cluster's GPUs and
// the Slurm jobs holding them (slurm.Allocation, from the latest card).
func (d *Daemon) allocation() ([]alloc.Unit, []alloc.Grant) {
	units, grants := d.jobs.Allocation()
	if c := d.cluster.get(); c != nil {
		cu, cg := slurm.Allocation(*c, d.id.ID.String())
		units, grants = append(units, cu...), append(grants, cg...)
	}
	return units, grants
}

// get returns the latest card (nil before the first read, and on a
// machine that stands for no cluster).
func (c *clusterCard) get() *slurm.Cluster {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.card
}

// set keeps card and tells the writer, unless only the time of the
// reading differs from the last card.
func (c *clusterCard) set(card slurm.Cluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.card != nil && sameCard(*c.card, card) {
		return
	}
	c.card = &card
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func sameCard(a, b slurm.Cluster) bool {
	a.Read, b.Read = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// run reads the cluster every c.every, and at once when one of labpool's
// jobs changes state, until ctx ends. The executor serves the queue from
// the snapshot its jobs' reads share; a failed read keeps the last good
// figures and says why in the card's Error.
func (c *clusterCard) run(ctx context.Context) error {
	t := beat.NewTicker(c.every)
	defer t.Stop()
	for {
		card, _ := c.src.ReadCluster(ctx) // the error is in card.Error
		if ctx.Err() != nil {
			return nil
		}
		c.set(card)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-c.jobs:
		}
	}
}

// nodeRecordCap is the most bytes a node record may hold (sync/schema).
var nodeRecordCap = func() int {
	k, _ := schema.Lookup(app.KindNode)
	return k.MaxData
}()

// marshalNodeRecord encodes rec within the node record's cap: a cluster's
// card too large for it loses the tail of its queue first (labpool's jobs
// lead it), then the tail of its node list.
func marshalNodeRecord(rec app.NodeRecord) ([]byte, error) {
	data, err := json.Marshal(rec)
	if err != nil || len(data) <= nodeRecordCap || rec.Cluster == nil {
		return data, err
	}
	c := *rec.Cluster
	rec.Cluster = &c
	fit := func() ([]byte, bool) {
		data, err := json.Marshal(rec)
		return data, err == nil && len(data) <= nodeRecordCap
	}
	queue, nodes := c.Queue, c.Nodes
	if data, ok := longest(len(queue), func(n int) ([]byte, bool) { c.Queue = queue[:n]; return fit() }); ok {
		return data, nil
	}
	c.Queue = nil
	if data, ok := longest(len(nodes), func(n int) ([]byte, bool) { c.Nodes = nodes[:n]; return fit() }); ok {
		return data, nil
	}
	return nil, fmt.Errorf("node record is over its cap of %d bytes without the cluster's queue and nodes", nodeRecordCap)
}

// longest finds the largest n in [0, max] for which try fits (try fits
// every n below one that fits) and returns what it encoded.
func longest(max int, try func(n int) ([]byte, bool)) ([]byte, bool) {
	lo, hi := 0, max // the answer is in [lo, hi], if any
	data, ok := try(0)
	if !ok {
		return nil, false
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, ok := try(mid); ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo > 0 {
		data, _ = try(lo)
	}
	return data, true
}

// slurmProof is how this agent proves a machine is a compute node of the
// cluster it stands for (app.SlurmProof): the device its owner enrolled
// for the node (policy --slurm-node), and the nodes' NodeAddr from its
// card, resolved here where it is a name, against the IPs its own live
// sessions with the machine come from.
func (d *Daemon) slurmProof() app.SlurmProof {
	return app.SlurmProof{
		Nodes: d.cluster.nodes,
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		Sessions: func(id string) []netip.Addr {
			pid, err := peer.ParseID(id)
			if err != nil || pid == d.id.ID {
				return nil // this machine holds no session with itself
			}
			return d.ep.SessionIPs(pid)
		},
		Enrolled: func(node string) string {
			if d.jobs == nil {
				return ""
			}
			for name, id := range d.jobs.Policy().SlurmNodes {
				if strings.EqualFold(name, node) {
					return id
				}
			}
			return ""
		},
	}
}

// nodes returns the nodes of the latest card (nil before the first read,
// and on a machine that stands for no cluster).
func (c *clusterCard) nodes() []slurm.Node {
	if card := c.get(); card != nil {
		return card.Nodes
	}
	return nil
}
