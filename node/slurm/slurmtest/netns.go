//go:build linux

package slurmtest

import (
	"fmt"
	"os/exec"
	"strings"
)

// ownSubnet is the subnet of a cluster on its own bridge. Its namespaces
// are reachable from nowhere else, so every cluster can use the same one.
const ownSubnet = "10.233.0"

func nsPath(ns string) string { return "/var/run/netns/" + ns }

// network makes the nodes' namespaces (and, without opts.Net, the
// controller's and the bridge's) and fills c.Netns and c.Nodes.
func (c *Cluster) network(opts Options) error {
	n := opts.Net
	if n == nil {
		n = &Net{Switch: c.Prefix + "sw", Bridge: "br0", Controller: c.Prefix + "c", ControllerAddr: ownSubnet + ".1"}
		for i := range opts.Nodes {
			n.NodeAddrs = append(n.NodeAddrs, fmt.Sprintf("%s.%d/24", ownSubnet, 11+i))
		}
		if err := c.addNetns(n.Switch); err != nil {
			return err
		}
		if err := ip("-n", n.Switch, "link", "add", n.Bridge, "type", "bridge"); err != nil {
			return err
		}
		if err := ip("-n", n.Switch, "link", "set", n.Bridge, "up"); err != nil {
			return err
		}
		if err := c.addNetns(n.Controller); err != nil {
			return err
		}
		if err := plug(n.Controller, n, c.Prefix+"pc", n.ControllerAddr+"/24"); err != nil {
			return err
		}
		c.ownCtl = true
	}
	if len(n.NodeAddrs) != opts.Nodes {
		return fmt.Errorf("%d node addresses for %d nodes", len(n.NodeAddrs), opts.Nodes)
	}
	c.Netns = n.Controller
	c.ctlAddr = n.ControllerAddr
	for i, addr := range n.NodeAddrs {
		node := Node{Name: fmt.Sprintf("node%d", i+1), Addr: strings.Split(addr, "/")[0], Netns: fmt.Sprintf("%sn%d", c.Prefix, i+1)}
		if err := c.addNetns(node.Netns); err != nil {
			return err
		}
		if err := plug(node.Netns, n, fmt.Sprintf("%sp%d", c.Prefix, i+1), addr); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	return nil
}

// addNetns makes a namespace that Close deletes.
func (c *Cluster) addNetns(name string) error {
	if err := ip("netns", "add", name); err != nil {
		return err
	}
	c.made = append(c.made, name)
	return ip("-n", name, "link", "set", "lo", "up")
}

// plug gives namespace ns an eth0 with addr, its peer (named peer) on the
// bridge of n. The pair is made inside the namespaces: nothing touches the
// machine's own network.
func plug(ns string, n *Net, peer, addr string) error {
	for _, args := range [][]string{
		{"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", n.Switch},
		{"-n", n.Switch, "link", "set", peer, "master", n.Bridge, "up"},
		{"-n", ns, "addr", "add", addr, "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
