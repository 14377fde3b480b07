package containers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
)

// What a job's network reaches besides the tunnels to it (Launch.Network,
// the machine's policy job-network). No job ever reaches another job, nor
// labpool's own ports on this host.
const (
	// NetIsolated: nothing; only the tunnels reach the job (a network
	// without a route out).
	NetIsolated = "isolated"
	// NetOutside: the LAN and the internet, never this host (the default).
	NetOutside = "outside"
	// NetHost: also this host's other services (labpool's ports stay shut).
	NetHost = "host"
)

// NetworkModes are the values Launch.Network takes ("" is NetOutside).
var NetworkModes = []string{NetIsolated, NetOutside, NetHost}

// LabelNetwork marks a job network with its mode.
const LabelNetwork = "labpool.network"

// bridgePrefix names the host interfaces of job networks by mode: the
// host guard (hostguard.go) matches them by prefix.
var bridgePrefix = map[string]string{NetIsolated: "lpi", NetOutside: "lpo", NetHost: "lph"}

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

// jobNetwork creates the network of one container, named as the container:
// a bridge of its own (so no other container shares it; the engine keeps
// bridges apart), no inter-container traffic, no route out when isolated.
// A network of that name that labpool made before is taken as it is.
func (r *Runtime) jobNetwork(ctx context.Context, l Launch, mode string) (string, error) {
	nctx, cancel := r.bounded(ctx)
	defer cancel()
	labels := map[string]string{LabelManaged: "true", LabelNetwork: mode}
	if r.cfg.Node != "" {
		labels[LabelNode] = r.cfg.Node
	}
	if job := l.Labels[LabelJob]; job != "" {
		labels[LabelJob] = job
	}
	_, err := r.api.NetworkCreate(nctx, l.Name, network.CreateOptions{
		Driver:   "bridge",
		Internal: mode == NetIsolated,
		Labels:   labels,
		Options: map[string]string{
			"com.docker.network.bridge.name":       bridgeName(l.Name, mode),
			"com.docker.network.bridge.enable_icc": "false",
		},
	})
	if err == nil {
		return l.Name, nil
	}
	cur, ierr := r.api.NetworkInspect(nctx, l.Name, network.InspectOptions{})
	if ierr == nil && cur.Labels[LabelManaged] == "true" && cur.Labels[LabelNetwork] == mode {
		return l.Name, nil
	}
	return "", fmt.Errorf("create the network of %s: %w", describe(l), explain(err, ""))
}

// dropNetwork removes a job network that labpool made, once no container
// uses it; anything else named so is left alone.
func (r *Runtime) dropNetwork(ctx context.Context, name string) {
	if name == "" {
		return
	}
	nctx, cancel := r.bounded(ctx)
	defer cancel()
	cur, err := r.api.NetworkInspect(nctx, name, network.InspectOptions{})
	if err != nil || cur.Labels[LabelManaged] != "true" || len(cur.Containers) > 0 {
		return
	}
	r.api.NetworkRemove(nctx, cur.ID) // best effort: PruneNetworks catches what stays
}

// PruneNetworks removes labpool's job networks (of this node) whose
// container is gone: those of jobs removed while the agent was away. (The
// engine's own prune would also take the networks of stopped containers,
// which have no endpoint while they do not run.)
func (r *Runtime) PruneNetworks(ctx context.Context) error {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if r.cfg.Node != "" {
		f.Add("label", LabelNode+"="+r.cfg.Node)
	}
	lctx, cancel := r.bounded(ctx)
	defer cancel()
	nets, err := r.api.NetworkList(lctx, network.ListOptions{Filters: f})
	if err != nil {
		return fmt.Errorf("list job networks: %w", explain(err, ""))
	}
	all, err := r.api.ContainerList(lctx, container.ListOptions{All: true})
	if err != nil {
		return fmt.Errorf("list containers: %w", explain(err, ""))
	}
	names := map[string]bool{}
	for _, c := range all {
		for _, n := range c.Names {
			names[strings.TrimPrefix(n, "/")] = true
		}
	}
	for _, n := range nets {
		if !names[n.Name] {
			r.dropNetwork(ctx, n.Name)
		}
	}
	return nil
}
