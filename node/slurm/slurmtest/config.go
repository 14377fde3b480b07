//go:build linux

package slurmtest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// writeConfig writes slurm.conf and gres.conf into c.Dir and makes the
// directories and fake GPU devices they name.
func (c *Cluster) writeConfig(opts Options) error {
	for _, d := range []string{"state", "spool", "log", "run", "dev"} {
		if err := os.Mkdir(filepath.Join(c.Dir, d), 0o755); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		if err := os.Mkdir(filepath.Join(c.Dir, "spool", n.Name), 0o755); err != nil {
			return err
		}
	}
	var conf, gres strings.Builder
	settings := c.settings()
	maps.Copy(settings, opts.Settings)
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&conf, "%s=%s\n", k, settings[k])
	}
	gres.WriteString("AutoDetect=off\n")
	var names []string
	for _, n := range c.Nodes {
		fmt.Fprintf(&conf, "NodeName=%s NodeAddr=%s CPUs=%d RealMemory=%d Gres=gpu:%s:%d\n",
			n.Name, n.Addr, opts.CPUsPerNode, opts.MemoryMB, opts.GPUType, opts.GPUsPerNode)
		files, err := c.fakeGPUs(n.Name, opts.GPUsPerNode)
		if err != nil {
			return err
		}
		fmt.Fprintf(&gres, "NodeName=%s Name=gpu Type=%s File=%s\n", n.Name, opts.GPUType, files)
		names = append(names, n.Name)
	}
	for _, p := range opts.Partitions {
		nodes := p.Nodes
		if nodes == nil {
			nodes = names
		}
		maxTime := "INFINITE"
		if p.MaxTime > 0 {
			maxTime = fmt.Sprint(int(p.MaxTime.Minutes()))
		}
		fmt.Fprintf(&conf, "PartitionName=%s Nodes=%s Default=%s MaxTime=%s State=UP\n",
			p.Name, strings.Join(nodes, ","), yesNo(p.Default), maxTime)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "gres.conf"), []byte(gres.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(c.Conf, []byte(conf.String()), 0o644)
}

// settings are the slurm.conf keys of every test cluster: root runs
// everything, nothing needs cgroups, systemd or accounting, and a job
// takes only the memory it asks (DefMemPerCPU), so that small jobs share
// a node.
func (c *Cluster) settings() map[string]string {
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".") // slurmctld runs where `hostname -s` is SlurmctldHost
	return map[string]string{
		"ClusterName":           c.Name,
		"SlurmctldHost":         fmt.Sprintf("%s(%s)", host, c.ctlAddr),
		"AuthType":              "auth/munge",
		"AuthInfo":              "socket=" + mungeSocket(filepath.Join(c.Dir, "munge")),
		"SlurmUser":             "root",
		"SlurmdUser":            "root",
		"StateSaveLocation":     filepath.Join(c.Dir, "state"),
		"SlurmdSpoolDir":        filepath.Join(c.Dir, "spool", "%n"),
		"SlurmctldPidFile":      filepath.Join(c.Dir, "run", "slurmctld.pid"),
		"SlurmdPidFile":         filepath.Join(c.Dir, "run", "slurmd-%n.pid"),
		"SlurmctldLogFile":      filepath.Join(c.Dir, "log", "slurmctld.log"),
		"SlurmdLogFile":         filepath.Join(c.Dir, "log", "slurmd-%n.log"),
		"ProctrackType":         "proctrack/linuxproc",
		"TaskPlugin":            "task/none",
		"SelectType":            "select/cons_tres",
		"SelectTypeParameters":  "CR_Core_Memory",
		"DefMemPerCPU":          "100",
		"GresTypes":             "gpu",
		"AccountingStorageType": "accounting_storage/none",
		"JobAcctGatherType":     "jobacct_gather/none",
		"JobCompType":           "jobcomp/none",
		"MpiDefault":            "none",
		"ReturnToService":       "2",
		"KillWait":              "2", // seconds from SIGTERM to SIGKILL on scancel
		"SchedulerParameters":   "batch_sched_delay=0",
		"SlurmdParameters":      "config_overrides", // CPUsPerNode may exceed this machine's
		"MailProg":              "/bin/true",
	}
}

// fakeGPUs makes n character devices (clones of /dev/null, major 1 minor
// 3) for node and returns them as gres.conf's File= range.
func (c *Cluster) fakeGPUs(node string, n int) (string, error) {
	dir := filepath.Join(c.Dir, "dev", node)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	for i := range n {
		if err := mknodNull(filepath.Join(dir, fmt.Sprintf("gpu%d", i))); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, fmt.Sprintf("gpu[0-%d]", n-1)), nil
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// mknodNull makes a character device like /dev/null at path.
func mknodNull(path string) error {
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		return fmt.Errorf("mknod %s c 1 3: %w", path, err)
	}
	return nil
}
