package daemon

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
)

// SlurmMode says whether the agent stands for a Slurm cluster
// (agent.SlurmMode).
type SlurmMode = agent.SlurmMode

// Slurm modes.
const (
	SlurmOff  = agent.SlurmOff  // never (the window, labpool web)
	SlurmAuto = agent.SlurmAuto // when sinfo answers and no Docker engine is reachable
	SlurmOn   = agent.SlurmOn   // agent --slurm
)

// clusterProof is how this agent proves a machine is a compute node of the
// cluster it stands for (app.SlurmProof): the device its owner enrolled
// for the node (policy --slurm-node), and the nodes' NodeAddr from its
// card, resolved here where it is a name, against the IPs its own live
// sessions with the machine come from.
func clusterProof(self peer.ID, sessions func(peer.ID) []netip.Addr, card *slurm.Card, policy func() jobs.Policy) app.SlurmProof {
	return app.SlurmProof{
		Nodes: card.Nodes,
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		Sessions: func(id string) []netip.Addr {
			pid, err := peer.ParseID(id)
			if err != nil || pid == self {
				return nil // this machine holds no session with itself
			}
			return sessions(pid)
		},
		Enrolled: func(node string) string {
			for name, id := range policy().SlurmNodes {
				if strings.EqualFold(name, node) {
					return id
				}
			}
			return ""
		},
	}
}

// allocation is this machine's grants record: its ledger's units and
// grants, and where it stands for a Slurm cluster (card not nil), the
// cluster's GPUs and the Slurm jobs holding them (slurm.Allocation, from
// the latest card).
func allocation(self string, jm *jobs.Manager, card *slurm.Card) func() ([]alloc.Unit, []alloc.Grant) {
	return func() ([]alloc.Unit, []alloc.Grant) {
		units, grants := jm.Allocation()
		if card == nil {
			return units, grants
		}
		if c := card.Get(); c != nil {
			cu, cg := slurm.Allocation(*c, self)
			units, grants = append(units, cu...), append(grants, cg...)
		}
		return units, grants
	}
}
