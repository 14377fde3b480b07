package alerting

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// Shares lists this machine's shared folders (*folders.Registry).
type Shares interface{ List() []folders.Share }

// Liveness says whether this machine has a live session with a member
// (*replica.Peers).
type Liveness interface{ Online(id string) bool }

// Inputs gives the evaluator the ledger's grants, the shared folders and
// the liveness of the pool's GPU machines (alerts.Inputs).
type Inputs struct {
	self   string
	db     *store.DB
	grants func() map[string]string // GPU UUID -> job ID
	shares Shares
	pool   Pool
	peers  Liveness
	names  *jobNames // nil until SetJobs

	mu   sync.Mutex         // guards gpus
	gpus map[string]gpuNode // whether each node has GPUs, as last read
}

type gpuNode struct {
	has bool
	at  time.Time
}

// NewInputs returns the inputs of the machine self (its device ID): grants
// gives the ledger's grants (GPU UUID -> job ID).
func NewInputs(self string, db *store.DB, grants func() map[string]string, shares Shares, p Pool, peers Liveness) *Inputs {
	return &Inputs{self: self, db: db, grants: grants, shares: shares, pool: p, peers: peers, gpus: map[string]gpuNode{}}
}

// Grants implements alerts.Inputs.
func (in *Inputs) Grants() map[string]string { return in.grants() }

// Folders implements alerts.Inputs.
func (in *Inputs) Folders() []alerts.Folder {
	var out []alerts.Folder
	for _, s := range in.shares.List() {
		out = append(out, alerts.Folder{Name: s.Name, Path: s.Path})
	}
	return out
}

// Peers implements alerts.Inputs: the other members that have GPUs (a
// laptop asleep is no alert). A machine removed from its pool watches
// none: the old pool's machines are no longer its concern, and the
// alerts it raised about them clear at its next evaluation.
func (in *Inputs) Peers() []alerts.PeerReading {
	st, ok := in.pool.Snapshot()
	if !ok || !activeIn(st, in.self) {
		return nil
	}
	var out []alerts.PeerReading
	for _, m := range st.Members {
		if m.Removed || m.ID == in.self || !in.gpuMachine(m.ID) {
			continue
		}
		out = append(out, alerts.PeerReading{Node: m.ID, Name: m.Name, Offline: !in.peers.Online(m.ID)})
	}
	return out
}

// gpuMachine says whether node last published GPUs, re-read at most every
// 30 s per node.
func (in *Inputs) gpuMachine(node string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if g, ok := in.gpus[node]; ok && time.Since(g.at) < 30*time.Second {
		return g.has
	}
	has := false
	rec, ok, err := in.db.Latest(context.Background(), node, app.KindNode, "")
	if err == nil && ok {
		var nr app.NodeRecord
		has = json.Unmarshal(rec.Data, &nr) == nil && len(nr.Info.GPUs) > 0
	}
	in.gpus[node] = gpuNode{has: has, at: time.Now()}
	return has
}

// activeIn says whether id is a member of st that was not removed.
func activeIn(st pool.State, id string) bool {
	for _, m := range st.Members {
		if m.ID == id {
			return !m.Removed
		}
	}
	return false
}
