package gpu

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// CriticalXIDs are the XID errors that quarantine a GPU, with what they mean
// (NVIDIA's XID catalog). Others (13, 31, 43: usually the application's own
// fault) are counted only.
var CriticalXIDs = map[uint64]string{
	48: "double-bit ECC error",
	63: "ECC page retirement or row remapping event",
	64: "ECC page retirement or row remapping failure",
	74: "NVLink error",
	79: "GPU has fallen off the bus",
	92: "high single-bit ECC error rate",
	94: "contained ECC error",
	95: "uncontained ECC error",
}

// XIDReason names an XID for people: "XID 79 (GPU has fallen off the bus)".
func XIDReason(code uint64) string {
	if what, ok := CriticalXIDs[code]; ok {
		return fmt.Sprintf("XID %d (%s)", code, what)
	}
	return fmt.Sprintf("XID %d", code)
}

// throttleNames are NVML's clock event (throttle) reasons by bit (nvml.h's
// values, written out so that this file builds without cgo; a test holds
// them to go-nvml's constants), as
// nvidia-smi names them, and which are a fault. Following NVIDIA's
// documentation of the clock event reasons: the software power cap (a GPU
// at full load sits at its power limit), sync boost, application clock
// settings, display clocks and idle are normal operation; a hardware
// slowdown (thermal, power brake or an external signal) and software
// thermal slowdown mean the GPU is too hot or its power supply failing.
var throttleNames = []struct {
	bit  uint64
	name string
	warn bool // a slowdown: the GPU's health is "warning"
}{
	{0x2, "applications_clocks_setting", false},
	{0x4, "sw_power_cap", false},
	{0x8, "hw_slowdown", true},
	{0x10, "sync_boost", false},
	{0x20, "sw_thermal_slowdown", true},
	{0x40, "hw_thermal_slowdown", true},
	{0x80, "hw_power_brake_slowdown", true},
	{0x100, "display_clocks_setting", false},
}

// eccWarnFor is how long a GPU stays "warning" after its correctable ECC
// count last grew.
const eccWarnFor = 10 * time.Minute

// Ack is what an owner accepted when clearing a GPU's quarantine: the
// faults seen so far. A new XID, more uncorrectable errors than ECC, or a
// new pending retirement quarantines the GPU again.
type Ack struct {
	ECCUncorrected uint64 `json:"ecc_uncorrected"`
	RetiredPending bool   `json:"retired_pending"` // accepted while it lasts
	RemapFailed    bool   `json:"remap_failed"`    // accepted while it lasts
}

// health is what a Sampler remembers of one GPU between samples. It is
// touched only by the goroutine making NVML calls.
type health struct {
	lost       bool
	lostReason string
	xids       uint64   // XID events since start
	critical   []uint64 // critical XIDs since start or the last Acknowledge
	ack        Ack
	corrected  uint64    // correctable ECC count last read
	corrSeen   bool      // corrected holds a reading
	corrGrewAt time.Time // when it last grew
	// eccLast and pendingLast are the latest readings, for Clear.
	eccLast     uint64
	pendingLast bool
	failedLast  bool
	// The inputs of the last assess, for assessXIDs.
	lastThrottle    uint64
	lastRemapFailed bool
	lastNow         time.Time
}

// assessXIDs assesses s again after XIDs arrived for it.
func (h *health) assessXIDs(s *Stats) {
	s.XIDErrors = h.xids
	h.assess(s, h.lastThrottle, 0, false, h.lastRemapFailed, h.lastNow)
}

// assess sets s.Health and s.HealthReason from the readings in s, what h
// remembers, and the active throttle bits.
func (h *health) assess(s *Stats, throttle uint64, corrected uint64, corrOK bool, remapFailed bool, now time.Time) {
	h.lastThrottle, h.lastRemapFailed, h.lastNow = throttle, remapFailed, now
	if h.lost {
		s.Health, s.HealthReason = HealthLost, h.lostReason
		return
	}
	h.eccLast, h.pendingLast, h.failedLast = max(h.eccLast, s.ECCUncorrected), s.RetiredPending, remapFailed
	if h.ack.RetiredPending && !s.RetiredPending {
		h.ack.RetiredPending = false // the retirement happened: a new one counts
	}
	if h.ack.RemapFailed && !remapFailed {
		h.ack.RemapFailed = false
	}
	if corrOK {
		if h.corrSeen && corrected > h.corrected {
			h.corrGrewAt = now
		}
		h.corrected, h.corrSeen = corrected, true
	}
	var critical []string
	for _, x := range h.critical {
		critical = append(critical, XIDReason(x))
	}
	if s.ECCUncorrected > h.ack.ECCUncorrected {
		critical = append(critical, "uncorrectable ECC errors") // their count is s.ECCUncorrected: the reason stays put as it grows
	}
	if s.RetiredPending && !h.ack.RetiredPending {
		critical = append(critical, "retired pages or remapped rows pending (reset the GPU)")
	}
	if remapFailed && !h.ack.RemapFailed {
		critical = append(critical, "row remapping failed")
	}
	if len(critical) > 0 {
		s.Health, s.HealthReason = HealthQuarantined, strings.Join(critical, "; ")
		return
	}
	var warn []string
	var throttled []string
	for _, t := range throttleNames {
		if t.warn && throttle&t.bit != 0 {
			throttled = append(throttled, t.name)
		}
	}
	if len(throttled) > 0 {
		warn = append(warn, "throttled: "+strings.Join(throttled, ", "))
	}
	if !h.corrGrewAt.IsZero() && now.Sub(h.corrGrewAt) < eccWarnFor {
		warn = append(warn, fmt.Sprintf("correctable ECC errors growing: %d", h.corrected))
	}
	if len(warn) > 0 {
		s.Health, s.HealthReason = HealthWarning, strings.Join(warn, "; ")
		return
	}
	s.Health, s.HealthReason = HealthOK, ""
}

// xid records one XID event.
func (h *health) xid(code uint64) {
	h.xids++
	if _, ok := CriticalXIDs[code]; ok && !slices.Contains(h.critical, code) {
		h.critical = append(h.critical, code)
	}
}

// ThrottleWarns reports whether the clock event reason name (as Stats.Throttle
// names it) is a slowdown that makes a GPU's health "warning": hw_slowdown,
// hw_thermal_slowdown, hw_power_brake_slowdown, sw_thermal_slowdown. The
// others (sw_power_cap at full load, sync_boost, applications clocks, idle)
// are normal operation.
func ThrottleWarns(name string) bool {
	for _, t := range throttleNames {
		if t.name == name {
			return t.warn
		}
	}
	return false
}

// throttleList names the active throttle reasons (gpu_idle left out).
func throttleList(bits uint64) []string {
	out := []string{}
	for _, t := range throttleNames {
		if bits&t.bit != 0 {
			out = append(out, t.name)
		}
	}
	return out
}
