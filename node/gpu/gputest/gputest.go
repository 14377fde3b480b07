//go:build linux && cgo

// Package gputest provides a fake NVML for tests of code that uses
// gpu.Sampler on machines without an NVIDIA GPU:
//
//	lib := gputest.NewLibrary(8)
//	lib.Devices[0].Fail["GetFanSpeed"] = nvml.ERROR_NOT_SUPPORTED
//	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
//
// Set fields before the Sampler reads them, or hold Device.Mu while changing
// them.
package gputest

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/labpool/labpool/node/gpu"
)

// Library is a fake NVML library holding Devices.
type Library struct {
	Mu        sync.Mutex
	Devices   []*Device
	InitRet   nvml.Return // what Init returns (SUCCESS by default)
	Inits     int         // calls to Init
	Shutdowns int         // calls to Shutdown
	// Hang, when not nil, makes Init wait until it is closed.
	Hang chan struct{}
	// HandleRet, when it names an index, is what DeviceGetHandleByIndex
	// returns for it (e.g. ERROR_GPU_IS_LOST).
	HandleRet map[int]nvml.Return
	// EventsRet, when not SUCCESS, is what EventSetCreate returns.
	EventsRet nvml.Return
	Events    *EventSet // the set EventSetCreate returned
}

// EventSet is a fake NVML event set: Wait returns the events queued by
// Library.XID, then ERROR_TIMEOUT.
type EventSet struct {
	mu    sync.Mutex
	queue []nvml.EventData
	freed bool
	// Hang, when not nil, makes Wait wait until it is closed.
	Hang chan struct{}
}

// Wait implements nvml.EventSet.
func (e *EventSet) Wait(uint32) (nvml.EventData, nvml.Return) {
	e.mu.Lock()
	hang := e.Hang
	e.mu.Unlock()
	if hang != nil {
		<-hang
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
	ev := e.queue[0]
	e.queue = e.queue[1:]
	return ev, nvml.SUCCESS
}

// Free implements nvml.EventSet.
func (e *EventSet) Free() nvml.Return {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.freed = true
	return nvml.SUCCESS
}

// SetHang makes Wait block until hang is closed (nil: never).
func (e *EventSet) SetHang(hang chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Hang = hang
}

// Freed reports whether Free was called.
func (e *EventSet) Freed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.freed
}

// EventSetCreate implements gpu.Library.
func (l *Library) EventSetCreate() (nvml.EventSet, nvml.Return) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	if l.EventsRet != nvml.SUCCESS {
		return nil, l.EventsRet
	}
	l.Events = &EventSet{}
	return l.Events, nvml.SUCCESS
}

// XID queues an XID event of device i, as the driver posts one.
func (l *Library) XID(i int, code uint64) {
	l.Mu.Lock()
	set, d := l.Events, l.Devices[i]
	l.Mu.Unlock()
	set.mu.Lock()
	defer set.mu.Unlock()
	set.queue = append(set.queue, nvml.EventData{Device: d, EventType: nvml.EventTypeXidCriticalError, EventData: code})
}

var _ gpu.Library = (*Library)(nil)

// NewLibrary returns a Library with n idle, H100-like GPUs.
func NewLibrary(n int) *Library {
	l := &Library{}
	for i := range n {
		l.Devices = append(l.Devices, NewDevice(i))
	}
	return l
}

// Init implements gpu.Library.
func (l *Library) Init() nvml.Return {
	if l.Hang != nil {
		<-l.Hang
	}
	l.Mu.Lock()
	defer l.Mu.Unlock()
	l.Inits++
	return l.InitRet
}

// Shutdown implements gpu.Library.
func (l *Library) Shutdown() nvml.Return {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	l.Shutdowns++
	return nvml.SUCCESS
}

// DeviceGetCount implements gpu.Library.
func (l *Library) DeviceGetCount() (int, nvml.Return) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return len(l.Devices), nvml.SUCCESS
}

// DeviceGetHandleByIndex implements gpu.Library; a nil entry in Devices
// reads as a GPU that cannot be opened.
func (l *Library) DeviceGetHandleByIndex(i int) (gpu.Device, nvml.Return) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	if i < 0 || i >= len(l.Devices) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	if r, ok := l.HandleRet[i]; ok && r != nvml.SUCCESS {
		return nil, r
	}
	if l.Devices[i] == nil {
		return nil, nvml.ERROR_NO_PERMISSION
	}
	return l.Devices[i], nvml.SUCCESS
}

// Counts returns how many times Init and Shutdown were called.
func (l *Library) Counts() (inits, shutdowns int) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.Inits, l.Shutdowns
}

// NewDevice returns an idle, H100-like GPU with index i.
func NewDevice(i int) *Device {
	return &Device{
		UUID:         fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", i),
		Name:         "NVIDIA H100 80GB HBM3",
		Memory:       nvml.Memory{Total: 80 << 30, Free: 80<<30 - 512<<20, Used: 512 << 20},
		PowerLimitMW: 700_000, PowerMW: 70_000, TempC: 30,
		SMClockMHz: 345, MemClockMHz: 2619, Fan: 0, PState: nvml.PSTATE_0,
		SupportedEvents: nvml.EventTypeXidCriticalError,
		Fail:            map[string]nvml.Return{"GetFanSpeed": nvml.ERROR_NOT_SUPPORTED},
	}
}
