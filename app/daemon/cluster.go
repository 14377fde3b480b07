package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
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
// or Slurm's default), with the card it publishes. A controller down now
// is no error: the card says so until it answers. Its jobs run as the
// accounts policy maps their owners to.
func openSlurm(ctx context.Context, c Config, policy func() jobs.Policy, log *slog.Logger) *executor {
	cfg := slurm.DefaultConfig()
	cfg.StateDir = c.SlurmDir
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(c.DataDir, "slurm")
	}
	cfg.Logger = log
	cfg.JobUser = c.SlurmJobUser
	cfg.Private = []string{c.DataDir} // the key, the socket, the replica
	if exe, err := os.Executable(); err == nil {
		cfg.Opener = []string{exe, slurm.OpenOutputVerb} // sudo runs it as a job's account: see main
	}
	cfg.UserFor = func(owner string) string { return policy().SlurmUsers[owner] }
	ex, err := slurm.New(ctx, cfg)
	if err != nil {
		log.Error("this machine stands for no Slurm cluster and runs no jobs", "err", err)
		return &executor{err: fmt.Errorf("stand for the Slurm cluster: %w", err)}
	}
	log.Info("standing for a Slurm cluster: jobs are submitted with sbatch", "state", cfg.StateDir, "job_user", cfg.JobUser)
	return &executor{ex: ex, card: slurm.NewCard(ex, slurm.CardEvery)}
}

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
