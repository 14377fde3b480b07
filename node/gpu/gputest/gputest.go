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
		Fail: map[string]nvml.Return{"GetFanSpeed": nvml.ERROR_NOT_SUPPORTED},
	}
}
