//go:build linux

package slurmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startDaemons starts slurmctld in the controller's namespace and one
// slurmd per node in the node's. They daemonize; nsenter, not `ip netns
// exec`, which would mount a /sys without the cgroup hierarchy.
func (c *Cluster) startDaemons() error {
	if err := c.daemon(c.Netns, "slurmctld", "-f", c.Conf); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := c.daemon(n.Netns, "slurmd", "-f", c.Conf, "-N", n.Name); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) daemon(ns, name string, args ...string) error {
	cmd := c.command(context.Background(), ns, name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start %s in %s: %v: %s\n%s", name, ns, err, bytes.TrimSpace(out), c.Logs())
	}
	return nil
}

// stopDaemons kills everything in the nodes' namespaces (slurmd, the job
// steps and their processes), then slurmctld and munged by their pid
// files (and everything in the controller's namespace, when Start made
// it).
func (c *Cluster) stopDaemons() {
	var pids []int
	for _, n := range c.Nodes {
		pids = append(pids, nsPids(n.Netns)...)
		pids = append(pids, pidFile(filepath.Join(c.Dir, "run", "slurmd-"+n.Name+".pid"), 0))
	}
	kill(pids, syscall.SIGKILL)
	pids = []int{pidFile(filepath.Join(c.Dir, "run", "slurmctld.pid"), time.Second)}
	if c.ownCtl {
		pids = append(pids, nsPids(c.Netns)...)
	}
	kill(pids, syscall.SIGTERM)
	kill([]int{pidFile(filepath.Join(c.Dir, "munge", "munged.pid"), 0)}, syscall.SIGTERM)
}

// kill sends sig to pids, then SIGKILL to those left after 5 s, and
// returns when they are all gone.
func kill(pids []int, sig syscall.Signal) {
	for _, p := range pids {
		if p > 1 {
			syscall.Kill(p, sig)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for p > 1 && alive(p) {
			if time.Now().After(deadline) {
				syscall.Kill(p, syscall.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// alive says whether process pid runs (a zombie does not: the daemons
// are not our children, and whoever reaps them may take its time).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := bytes.Cut(stat, []byte(") "))
	return ok && len(rest) > 0 && rest[0] != 'Z' && rest[0] != 'X'
}

// pidFile reads a daemon's pid file, waiting up to wait for it to appear
// (a daemon writes it a moment after it returns); 0 if there is none.
func pidFile(path string, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		data, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nsPids lists the processes in network namespace ns.
func nsPids(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}
