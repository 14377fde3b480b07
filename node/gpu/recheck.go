//go:build linux && cgo

package gpu

import (
	"reflect"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// What Open reads once can change while the agent runs: a GPU appears
// (hot-plugged, or back after a reset), one is lost, an owner turns MIG on
// or off or makes instances. A Sample checks, every TopologyEvery, the GPU
// count and the MIG mode and instances of each GPU that has MIG (a few
// calls a minute, never one a second), and reads the topology again at once
// when it finds a GPU lost; Devices and DevicesGeneration show the change.

// recheckDue checks the GPUs and MIG when TopologyEvery has passed since
// the last check (the first Sample starts the clock, and so does a clock
// that stepped back). s.sem is held.
func (s *Sampler) recheckDue(now time.Time) {
	if s.topoAt.IsZero() || now.Before(s.topoAt) { // the first, or the clock stepped back
		s.topoAt = now
		return
	}
	if now.Sub(s.topoAt) >= s.cfg.TopologyEvery {
		s.recheck(now, false)
	}
}

// lostCount is how many GPUs are lost. s.sem is held.
func (s *Sampler) lostCount() int {
	n := 0
	for i := range s.health {
		if s.health[i].lost {
			n++
		}
	}
	return n
}

// recheck opens the GPUs that appeared and reads MIG again; when either
// changed, or force is set (a GPU was found lost), it reads the topology
// again and publishes the new Devices. s.sem is held.
func (s *Sampler) recheck(now time.Time, force bool) {
	s.topoAt = now
	next := slices.Clone(s.infos)
	changed := s.openAppeared(&next) || force
	for i, d := range s.devs {
		td, ok := d.(topoDevice)
		if !ok || next[i].MIG == nil || s.health[i].lost {
			continue // no MIG to change
		}
		if !reflect.DeepEqual(readMIG(td), next[i].MIG) {
			changed = true
		}
	}
	if !changed {
		return
	}
	live := slices.Clone(s.devs)
	for i := range next {
		next[i].Links, next[i].MIG = nil, nil // read again below, into new slices
		if s.health[i].lost {
			live[i] = nil // a lost GPU reaches no other
		}
	}
	readTopology(next, live)
	s.infoMu.Lock()
	s.infos = next
	s.infoMu.Unlock()
	s.gen.Add(1)
}

// openAppeared opens each GPU NVML counts that the Sampler does not know,
// appends it to infos, and reports whether there was one. s.sem is held.
func (s *Sampler) openAppeared(infos *[]Info) bool {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS || n == len(*infos) {
		return false
	}
	known := map[int]bool{}
	for _, in := range *infos {
		known[in.Index] = true
	}
	added := false
	for i := range n {
		if known[i] {
			continue
		}
		d, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue // hidden from us, as it may have been at Open
		}
		*infos = append(*infos, readInfo(i, d, s.cfg.SystemMemory))
		s.devs = append(s.devs, d)
		s.health = append(s.health, health{})
		s.state = append(s.state, newDevState(s.cfg.SystemMemory))
		if s.events != nil {
			d.RegisterEvents(nvml.EventTypeXidCriticalError, s.events)
		}
		added = true
	}
	return added
}
