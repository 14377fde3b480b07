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
	"runtime"
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
	// GOOS and Arch are the OS and architecture labpool was built for, as
	// Go names them: "linux", "darwin", "windows"; "amd64", "arm64".
	GOOS string `json:"goos"`
	Arch string `json:"arch"`
	// BootTime is when this machine started (Unix seconds); 0 when unknown.
	BootTime uint64 `json:"boot_time"`
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
		DiskRefresh:    time.Minute,
		SkipInterfaces: skipInterfaces(runtime.GOOS),
	}
}

// skipInterfaces are the prefixes of an OS's loopback and virtual
// interfaces (goos as runtime.GOOS names it). On macOS: Apple Wireless
// Direct Link (awdl, llw), tunnels (utun, gif, stf), Internet Sharing's
// bridges, the access point (ap) and Apple Silicon's private link (anpi).
// On Windows, where gopsutil names interfaces by their friendly names:
// loopback, Hyper-V and WSL switches (vEthernet), and IPv6 transition
// tunnels.
func skipInterfaces(goos string) []string {
	switch goos {
	case "darwin":
		return []string{"lo", "awdl", "llw", "utun", "gif", "stf", "bridge", "anpi", "ap", "vmenet"}
	case "windows":
		return []string{"Loopback", "vEthernet", "isatap", "Teredo", "Local Area Connection* "}
	}
	return []string{"lo", "veth", "docker", "br-", "virbr", "cni", "flannel",
		"cali", "vxlan", "ifb", "tunl"}
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
