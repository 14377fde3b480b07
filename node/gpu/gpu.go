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
// one missing figure never fails a whole sample.
package gpu

import "errors"

// ErrNoDriver means the NVIDIA driver (libnvidia-ml) is not installed or not
// loaded here.
var ErrNoDriver = errors.New("no NVIDIA GPU found")

// ErrClosed means the Sampler was closed.
var ErrClosed = errors.New("gpu sampler closed")

// Info is what changes rarely about a GPU, read once in Open.
type Info struct {
	Index         int     `json:"index"` // NVML index
	UUID          string  `json:"uuid"`
	Name          string  `json:"name"`
	MemTotalBytes uint64  `json:"mem_total_bytes"`
	PowerLimitW   float64 `json:"power_limit_w"`
}

// Stats is one reading of one GPU.
type Stats struct {
	Index          int       `json:"index"`
	UUID           string    `json:"uuid"`
	Name           string    `json:"name"`
	UtilPercent    float64   `json:"util_percent"`     // SM busy
	MemUtilPercent float64   `json:"mem_util_percent"` // memory controller busy
	MemUsedBytes   uint64    `json:"mem_used_bytes"`
	MemTotalBytes  uint64    `json:"mem_total_bytes"`
	TempC          float64   `json:"temp_c"`
	PowerW         float64   `json:"power_w"`
	PowerLimitW    float64   `json:"power_limit_w"`
	SMClockMHz     int       `json:"sm_clock_mhz"`
	MemClockMHz    int       `json:"mem_clock_mhz"`
	FanPercent     int       `json:"fan_percent"` // -1 when the GPU has no fan
	PState         int       `json:"pstate"`      // 0 (fastest) to 15; -1 when unknown
	Processes      []Process `json:"processes"`
	// Error says which readings failed for a reason other than "not
	// supported", e.g. "read temperature: GPU is lost"; empty when none did.
	Error string `json:"error,omitempty"`
}

// Process is one process using a GPU.
type Process struct {
	PID      uint32 `json:"pid"`
	MemBytes uint64 `json:"mem_bytes"` // 0 when NVML cannot tell
}
