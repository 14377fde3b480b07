package daemon

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/agent"
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
