// Package host samples this machine's CPU, load, memory, disks and network
// with gopsutil.
//
// A Sampler is built to run at 1 Hz forever: each Sample reads a few small
// files under /proc and statfs's a few mounts. On Linux it keeps those files
// open and parses them itself (procfs_linux.go) instead of through gopsutil. CPU percent and network rates
// are deltas between successive Samples (the first reads 0), so Sample never
// sleeps. The list of disks is re-read only every Config.DiskRefresh.
package host

import (
	"sync"
	"time"
)

// Info is what changes rarely about this machine.
type Info struct {
	Hostname      string `json:"hostname"`
	OS            string `json:"os"` // e.g. "ubuntu 24.04"
	Kernel        string `json:"kernel"`
	CPUModel      string `json:"cpu_model"`
	Cores         int    `json:"cores"` // logical CPUs
	MemTotalBytes uint64 `json:"mem_total_bytes"`
}

// Stats is one reading of this machine.
type Stats struct {
	CPUPercent    float64 `json:"cpu_percent"` // of all CPUs, 0 to 100
	Load1         float64 `json:"load1"`
	Load5         float64 `json:"load5"`
	Load15        float64 `json:"load15"`
	MemUsedBytes  uint64  `json:"mem_used_bytes"` // total minus available
	MemTotalBytes uint64  `json:"mem_total_bytes"`
	Disks         []Disk  `json:"disks"`
	NetRxBps      float64 `json:"net_rx_bps"` // bytes per second
	NetTxBps      float64 `json:"net_tx_bps"`
}

// Disk is one local filesystem, or the filesystem of one extra path.
type Disk struct {
	Mount      string `json:"mount"`
	UsedBytes  uint64 `json:"used_bytes"`
	TotalBytes uint64 `json:"total_bytes"`
}

// Config configures a Sampler.
type Config struct {
	// ExtraPaths are directories (shared folders) whose filesystem is
	// reported even when it is not local, unless a local disk already covers it.
	ExtraPaths []string
	// DiskRefresh is how often the list of mounted filesystems is re-read.
	DiskRefresh time.Duration
	// SkipInterfaces are prefixes of network interfaces left out of the
	// rates: loopback and virtual ones that would count traffic twice.
	SkipInterfaces []string
}

// DefaultConfig returns the configuration the daemon uses.
func DefaultConfig() Config {
	return Config{
		DiskRefresh: time.Minute,
		SkipInterfaces: []string{"lo", "veth", "docker", "br-", "virbr", "cni", "flannel",
			"cali", "vxlan", "ifb", "tunl"},
	}
}

// Sampler reads this machine. Its methods are safe for concurrent use.
type Sampler struct {
	cfg Config
	src source

	mu      sync.Mutex // guards the fields below, and serializes Sample
	cpu     cpuCounters
	net     map[string]netCounters
	netAt   time.Time
	disks   []string // mounts and extra paths Sample statfs's
	disksAt time.Time
}

// NewSampler returns a Sampler; it reads nothing until Sample or Info.
func NewSampler(cfg Config) *Sampler {
	if cfg.DiskRefresh <= 0 {
		cfg.DiskRefresh = DefaultConfig().DiskRefresh
	}
	return &Sampler{cfg: cfg, src: osSource()}
}
