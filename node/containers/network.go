package containers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/labpool/labpool/node/jobs"
)

// What a job's network reaches besides the tunnels to it (Launch.Network,
// the machine's policy job-network, jobs.NetworkModes). No job ever reaches
// another job, nor labpool's own ports on this host.
const (
	NetIsolated = jobs.NetIsolated // nothing; only the tunnels reach the job (a network without a route out)
	NetOutside  = jobs.NetOutside  // the LAN and the internet, never this host (the default)
	NetHost     = jobs.NetHost     // also this host's other services (labpool's ports stay shut)
)

// NetworkModes are the values Launch.Network takes ("" is NetOutside).
var NetworkModes = jobs.NetworkModes

// LabelNetwork marks a job network with its mode.
const LabelNetwork = "labpool.network"

// bridgePrefix names the host interfaces of job networks by mode: the
// host guard (hostguard.go) matches them by prefix.
var bridgePrefix = map[string]string{NetIsolated: "lpi", NetOutside: "lpo", NetHost: "lph"}

// networkName is the network a launch joins in mode: one per owner and
// mode on this node (the engine has a few dozen address ranges for
// bridges, not one per job), or per container for a launch without an
// owner. Containers on one network cannot talk either (enable_icc=false).
func (r *Runtime) networkName(l Launch, mode string) string {
	key := "owner:" + l.Labels[LabelOwner]
	if l.Labels[LabelOwner] == "" {
		key = "container:" + l.Name
	}
	sum := sha256.Sum256([]byte(r.cfg.Node + "\x00" + key))
	return "labpool-" + mode + "-" + hex.EncodeToString(sum[:6])
}

// bridgeName is the host interface of the network name in mode: the
// mode's prefix and 12 hex digits of the name's hash (15 characters, the
// kernel's limit).
func bridgeName(name, mode string) string {
	sum := sha256.Sum256([]byte(name))
	return bridgePrefix[mode] + hex.EncodeToString(sum[:6])
}

// networkMode checks a launch's mode, "" meaning NetOutside.
func networkMode(m string) (string, error) {
	switch m {
	case "":
		return NetOutside, nil
	case NetIsolated, NetOutside, NetHost:
		return m, nil
	}
	return "", fmt.Errorf("job network %q: use isolated, outside or host", m)
}

// jobNetwork makes sure the network l joins exists (see networkName): a
// bridge of its own, which the engine keeps apart from every other, with
// no traffic between its containers and no route out when isolated. The
// caller holds netMu until the container is created on it.
func (r *Runtime) jobNetwork(ctx context.Context, l Launch, mode string) (string, error) {
	name := r.networkName(l, mode)
	nctx, cancel := r.bounded(ctx)
	defer cancel()
	cur, err := r.api.NetworkInspect(nctx, name, network.InspectOptions{})
	if err == nil && cur.Labels[LabelManaged] == "true" && cur.Labels[LabelNetwork] == mode {
		return name, nil
	}
	labels := map[string]string{LabelManaged: "true", LabelNetwork: mode}
	if r.cfg.Node != "" {
		labels[LabelNode] = r.cfg.Node
	}
	if o := l.Labels[LabelOwner]; o != "" {
		labels[LabelOwner] = o
	}
	_, err = r.api.NetworkCreate(nctx, name, network.CreateOptions{
		Driver:   "bridge",
		Internal: mode == NetIsolated,
		Labels:   labels,
		Options: map[string]string{
			"com.docker.network.bridge.name":       bridgeName(name, mode),
			"com.docker.network.bridge.enable_icc": "false",
		},
	})
	if err != nil {
		return "", fmt.Errorf("create the network of %s: %w", describe(l), explain(err, ""))
	}
	return name, nil
}

// dropNetwork removes a job network that labpool made once no container,
// running or not, is on it; anything else is left alone.
func (r *Runtime) dropNetwork(ctx context.Context, name string) {
	if name == "" {
		return
	}
	r.netMu.Lock()
	defer r.netMu.Unlock()
	nctx, cancel := r.bounded(ctx)
	defer cancel()
	cur, err := r.api.NetworkInspect(nctx, name, network.InspectOptions{})
	if err != nil || cur.Labels[LabelManaged] != "true" {
		return
	}
	on, err := r.api.ContainerList(nctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("network", cur.ID))})
	if err != nil || len(on) > 0 {
		return
	}
	r.api.NetworkRemove(nctx, cur.ID) // best effort: PruneNetworks catches what stays
}

// PruneNetworks removes labpool's job networks (of this node) that no
// container is on: those of jobs removed while the agent was away. (The
// engine's own prune would also take the networks of stopped containers,
// which have no endpoint while they do not run.)
func (r *Runtime) PruneNetworks(ctx context.Context) error {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if r.cfg.Node != "" {
		f.Add("label", LabelNode+"="+r.cfg.Node)
	}
	lctx, cancel := r.bounded(ctx)
	nets, err := r.api.NetworkList(lctx, network.ListOptions{Filters: f})
	cancel()
	if err != nil {
		return fmt.Errorf("list job networks: %w", explain(err, ""))
	}
	for _, n := range nets {
		r.dropNetwork(ctx, n.Name)
	}
	return nil
}
