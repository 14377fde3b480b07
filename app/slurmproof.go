package app

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
)

// SlurmProof is how a cluster's agent proves that a pool machine is the
// Slurm compute node it names: the cluster machine's owner enrolled the
// machine's device ID for the node (policy --slurm-node NODE=MACHINE;
// rule "a compute node is enrolled by the cluster's owner"), and the
// agent holds a live session with it, whose handshake pinned that device
// ID, from an IP of the node's NodeAddr as Slurm gives it to this agent
// (rule "a compute node is proven by its address"). An address alone is
// not enough: a member's job on the node could start an agent of its own
// there. A host name in a node record is only the machine's word: it
// picks the machine to check, it proves nothing.
type SlurmProof struct {
	// Nodes returns the cluster's nodes as this agent read them from
	// Slurm (its card: each node's name and NodeAddr); nil: none read.
	Nodes func() []slurm.Node
	// Resolve returns the IPs of a NodeAddr that is a host name, as this
	// agent resolves it (net.Resolver.LookupNetIP); nil: names prove
	// nothing.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Sessions returns the remote IPs of this agent's live sessions with
	// device id (transport.Endpoint.SessionIPs).
	Sessions func(id string) []netip.Addr
	// Enrolled returns the device ID the cluster machine's owner enrolled
	// for a node (by its name, lower case, short: jobs.Policy.SlurmNodes);
	// "": none, and the node is believed of no machine. nil: none.
	Enrolled func(node string) string
}

// enrolled returns, of the machines that claim node, the one enrolled
// for it (none, or a list of one).
func (p SlurmProof) enrolled(node string, claimants []string) []string {
	if p.Enrolled == nil {
		return nil
	}
	id := p.Enrolled(node)
	if id != "" && slices.Contains(claimants, id) {
		return []string{id}
	}
	return nil
}

// slurmResolveWait bounds one resolution of a NodeAddr: the judge runs in
// the job manager's step.
const slurmResolveWait = 2 * time.Second

// resolved is the IPs of a NodeAddr that is a name, and when it was
// resolved.
type resolved struct {
	ips []netip.Addr
	at  time.Time
}

// nodeAddrs returns the NodeAddr of each node of the cluster by host name
// (lower case, short).
func (p SlurmProof) nodeAddrs() map[string]string {
	out := map[string]string{}
	if p.Nodes == nil {
		return out
	}
	for _, n := range p.Nodes() {
		if name := shortHost(n.Name); name != "" && n.Addr != "" {
			out[name] = n.Addr
		}
	}
	return out
}

// addrIPs returns the IPs of NodeAddr addr: itself where it is an IP, else
// its resolution, made again every slurmHostsEvery (on an error the last
// one stays; none before a first success). Callers hold x.mu.
func (x *SlurmIdle) addrIPs(ctx context.Context, now time.Time, addr string) []netip.Addr {
	if ip, err := netip.ParseAddr(addr); err == nil {
		return []netip.Addr{ip.Unmap().WithZone("")}
	}
	r, ok := x.resolved[addr]
	if (ok && now.Sub(r.at) < slurmHostsEvery && !now.Before(r.at)) || x.proof.Resolve == nil {
		return r.ips
	}
	rctx, cancel := context.WithTimeout(ctx, slurmResolveWait)
	defer cancel()
	if ips, err := x.proof.Resolve(rctx, addr); err == nil {
		r.ips = r.ips[:0:0]
		for _, ip := range ips {
			r.ips = append(r.ips, ip.Unmap().WithZone(""))
		}
	}
	r.at = now
	x.resolved[addr] = r
	return r.ips
}

// proven returns, of the machines that claim a host, the one that holds a
// session from an IP of the host's NodeAddr (ips); false where none does,
// or several do (rule "one agent per compute node").
func (p SlurmProof) proven(claimants []string, ips []netip.Addr) (string, bool) {
	if p.Sessions == nil || len(ips) == 0 {
		return "", false
	}
	found, n := "", 0
	for _, m := range claimants {
		from := p.Sessions(m)
		if slices.ContainsFunc(from, func(ip netip.Addr) bool { return slices.Contains(ips, ip.Unmap().WithZone("")) }) {
			found, n = m, n+1
		}
	}
	return found, n == 1
}

// NewSlurmProof is how the agent self proves a machine is a compute node
// of the cluster it stands for: the device its owner enrolled for the node
// (policy --slurm-node), and the nodes' NodeAddr from its card (nil: it
// stands for none), resolved here where it is a name, against the IPs its
// own live sessions with the machine come from (sessions:
// transport.Endpoint.SessionIPs).
func NewSlurmProof(self peer.ID, sessions func(peer.ID) []netip.Addr, card *slurm.Card, policy func() jobs.Policy) SlurmProof {
	return SlurmProof{
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
