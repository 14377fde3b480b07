// Package gpu reads NVIDIA GPUs through NVML, loaded at run time with
// go-nvml: a machine without the driver gets ErrNoDriver from Open and runs
// fine otherwise.
//
// A Sampler holds one NVML handle for its whole life (Init in Open, Shutdown
// in Close) and never spawns nvidia-smi. Every NVML call runs on a goroutine
// of its own, one batch at a time, so that a driver that blocks cannot hang
// the caller: Sample returns when its context ends, and the stuck call is
// waited for before the next one starts.
//
// A reading a GPU does not support leaves its zero value (a fan reads -1), so
// one missing figure never fails a whole sample, and it is not asked again
// until the Sampler reopens. Each call costs CPU on a real driver (the
// energy counter about 3 ms on an H200): what cannot change is read once,
// in Open, the power limit once a minute, the energy counter once a minute
// and when a grant begins or ends (ReadEnergy), the rest every sample.
//
// NVML is read only where go-nvml builds: Linux with cgo (its files whose
// names say nvml, sampler, read, topology, recheck, energy and simulate carry
// `//go:build linux && cgo`). Everywhere else (macOS, Windows, a Linux build
// without cgo) nonvml.go gives the same API, whose Open says plainly that
// this machine offers no GPUs: the types, health rules and XID names are
// shared by both builds, so the rest of labpool builds on every OS alike.
package gpu

import (
	"errors"
	"time"
)

// ErrNoDriver means the NVIDIA driver (libnvidia-ml) is not installed or not
// loaded here.
var ErrNoDriver = errors.New("no NVIDIA GPU found")

// ErrClosed means the Sampler was closed.
var ErrClosed = errors.New("gpu sampler closed")

// Config configures a Sampler.
type Config struct {
	// LibraryPath is the NVML library to load; empty means the system's
	// libnvidia-ml.so.1.
	LibraryPath string
	// Timeout bounds each batch of NVML calls: Open, one Sample, Close.
	Timeout time.Duration
	// TopologyEvery is how often a Sample checks for GPUs that appeared
	// and for changes of MIG (recheck.go).
	TopologyEvery time.Duration
	// SystemMemory reads the system's memory, total and used (total less
	// available), for a GPU with unified memory (unified.go); nil means
	// gopsutil's reading.
	SystemMemory func() (total, used uint64, err error)
}

// DefaultConfig returns the configuration the daemon uses.
func DefaultConfig() Config {
	return Config{Timeout: 3 * time.Second, TopologyEvery: time.Minute}
}

// Info is what changes rarely about a GPU, read once in Open.
type Info struct {
	Index         int    `json:"index"` // NVML index
	UUID          string `json:"uuid"`
	Name          string `json:"name"`
	MemTotalBytes uint64 `json:"mem_total_bytes"`
	// MemUnified: the GPU shares the system's memory (a GB10, DGX Spark),
	// NVML answered NOT_SUPPORTED for its memory, and MemTotalBytes is the
	// system's (unified.go).
	MemUnified  bool    `json:"mem_unified,omitempty"`
	PowerLimitW float64 `json:"power_limit_w"`
	// PCIBusID, Links and MIG are read in Open (topology.go), and again
	// when a GPU appears or is lost or MIG changes (recheck.go): the GPU's
	// PCI address, how it reaches each other GPU here, and its MIG mode and
	// instances (nil: the GPU has no MIG).
	PCIBusID string `json:"pci_bus_id,omitempty"`
	Links    []Link `json:"links,omitempty"`
	MIG      *MIG   `json:"mig,omitempty"`
}

// Stats is one reading of one GPU. It carries hardware only: who holds
// the GPU and its processes travels beside it (agent.Sample.Holding).
type Stats struct {
	Index          int       `json:"index"`
	UUID           string    `json:"uuid"`
	Name           string    `json:"name"`
	UtilPercent    float64   `json:"util_percent"`     // SM busy
	MemUtilPercent float64   `json:"mem_util_percent"` // memory controller busy
	MemUsedBytes   uint64    `json:"mem_used_bytes"`   // as nvidia-smi shows it: reserved memory apart
	MemTotalBytes  uint64    `json:"mem_total_bytes"`
	TempC          float64   `json:"temp_c"`
	PowerW         float64   `json:"power_w"`
	PowerLimitW    float64   `json:"power_limit_w"`
	SMClockMHz     int       `json:"sm_clock_mhz"`
	MemClockMHz    int       `json:"mem_clock_mhz"`
	FanPercent     int       `json:"fan_percent"` // -1 when the GPU has no fan
	PState         int       `json:"pstate"`      // 0 (fastest) to 15; -1 when unknown
	Processes      []Process `json:"processes"`
	// Health is HealthOK, HealthWarning, HealthQuarantined or HealthLost;
	// HealthReason says why when it is not ok, e.g. "XID 79 (GPU has
	// fallen off the bus)" or "throttled: hw_thermal_slowdown".
	Health       string `json:"health"`
	HealthReason string `json:"health_reason"`
	// Throttle lists the clock event (throttle) reasons active now (NVML's
	// names, e.g. "hw_thermal_slowdown", "sw_power_cap"; "gpu_idle" is left
	// out); only the slowdowns ThrottleWarns names make Health "warning".
	// EnergyMJ is read once a minute and when a grant begins or ends
	// (ReadEnergy), the power drawn integrated in between; it never goes back.
	Throttle       []string `json:"throttle"`
	EnergyMJ       uint64   `json:"energy_mj"`       // total energy counter in mJ; 0 when unsupported
	XIDErrors      uint64   `json:"xid_errors"`      // XID events seen since the sampler started
	ECCUncorrected uint64   `json:"ecc_uncorrected"` // volatile uncorrectable ECC errors
	RetiredPending bool     `json:"retired_pending"` // retired pages or remapped rows pending a reset
	// Error says which readings failed for a reason other than "not
	// supported", e.g. "read temperature: GPU is lost"; empty when none did.
	Error string `json:"error,omitempty"`
	// MemReservedBytes is memory the driver keeps for itself (NVML's v2
	// memory info): neither used (MemUsedBytes) nor free; 0 where the
	// driver has no v2.
	MemReservedBytes uint64 `json:"mem_reserved_bytes"`
	// MemUnified: the memory figures are the system's, which this GPU
	// shares (see Info.MemUnified); the host's meter shows the same memory.
	MemUnified bool `json:"mem_unified,omitempty"`
}

// Health states of a GPU.
const (
	HealthOK          = "ok"
	HealthWarning     = "warning"     // throttling, correctable ECC errors growing
	HealthQuarantined = "quarantined" // a critical fault: no new job gets it
	HealthLost        = "lost"        // NVML answers ERROR_GPU_IS_LOST
)

// Process is one process using a GPU, as NVML lists it (whose it is:
// agent.Sample.Holding).
type Process struct {
	PID      uint32 `json:"pid"`
	MemBytes uint64 `json:"mem_bytes"` // 0 when NVML cannot tell
	// Compute: a CUDA (compute) context, not only graphics (a desktop's
	// display server or compositor draws on the GPU all day; a lent
	// machine's owner at work runs compute).
	Compute bool `json:"compute,omitempty"`
}

// Link is how one GPU reaches another GPU of the same machine, as
// `nvidia-smi topo -m` shows it: NVLink (NV#) where they share links, and
// their closest common PCIe ancestor in any case.
type Link struct {
	Peer     int    `json:"peer"`      // the other GPU's NVML index
	PeerUUID string `json:"peer_uuid"` // the other GPU's UUID
	// NVLinks is the number of active NVLink links between the two: direct
	// links, plus, where both reach the same NVSwitch fabric, the fewer of
	// their switch links (an HGX H100 reads 18). 0: no NVLink.
	NVLinks int `json:"nvlinks"`
	// PCIe is their closest common ancestor: PIX (one PCIe switch), PXB
	// (several switches), PHB (a host bridge), NODE (one NUMA node), SYS
	// (across NUMA nodes); "" where NVML cannot tell.
	PCIe string `json:"pcie"`
}

// MIG is a GPU's Multi-Instance GPU mode and instances.
type MIG struct {
	Supported bool `json:"supported"` // the GPU can be partitioned
	Enabled   bool `json:"enabled"`   // MIG mode is on now
	// Pending is the mode after the next GPU reset, when it differs.
	Pending   bool          `json:"pending"`
	Instances []MIGInstance `json:"instances"` // empty unless Enabled
}

// MIGInstance is one MIG device: a compute instance within a GPU instance.
// A job is granted it by its UUID ("MIG-...").
type MIGInstance struct {
	UUID            string `json:"uuid"`
	Name            string `json:"name"` // e.g. "NVIDIA A100-SXM4-40GB MIG 1g.5gb"
	GPUInstance     int    `json:"gpu_instance"`
	ComputeInstance int    `json:"compute_instance"`
	MemTotalBytes   uint64 `json:"mem_total_bytes"`
}
