//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Sampler reads the GPUs of this machine through one NVML handle.
// Its methods are safe for concurrent use; NVML calls run one batch at a time.
type Sampler struct {
	lib    Library
	cfg    Config
	infoMu sync.Mutex // guards infos for Devices; infos changes only under sem too
	infos  []Info     // read in Open; replaced whole when a recheck finds a change
	devs   []Device   // handles of infos, same order
	// sem is held by the goroutine making NVML calls; it guards the fields
	// below and serializes calls into the driver.
	sem    chan struct{}
	closed bool
	health []health      // per device, same order
	state  []devState    // per device, same order
	events nvml.EventSet // XID events; nil where NVML has none
	evErr  string        // why events are not read, "" when they are
	now    func() time.Time
	topoAt time.Time // when GPUs and MIG were last checked (recheck.go); zero before the first Sample

	wantMu sync.Mutex      // guards want; never held across an NVML call
	want   map[string]bool // UUIDs whose energy counter the next Sample reads

	gen atomic.Uint64 // changes of infos since Open (DevicesGeneration)
}

// devState is what a Sampler keeps of one GPU between samples, beside its
// health: the readings it does not support (not asked again until the
// Sampler reopens), its energy counter, and its power limit (read once a
// minute).
type devState struct {
	skip    map[string]bool
	energy  energy
	limitW  float64
	limitAt time.Time // when limitW was read; zero: never
	// sysMem reads the system's memory, for a GPU with unified memory.
	sysMem func() (total, used uint64, err error)
}

func newDevState(sysMem func() (total, used uint64, err error)) devState {
	return devState{skip: map[string]bool{}, sysMem: sysMem}
}

// maxEvents bounds the events drained in one Sample.
const maxEvents = 64

// Open loads NVML, initializes it and reads which GPUs there are. It returns
// ErrNoDriver where NVML cannot be loaded. A machine with the driver but no
// GPU gets a Sampler with no devices.
func Open(cfg Config) (*Sampler, error) {
	return OpenLibrary(newLibrary(cfg.LibraryPath), cfg)
}

// OpenLibrary is Open with lib in place of the system's NVML (for example
// a gputest.Library).
func OpenLibrary(lib Library, cfg Config) (*Sampler, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultConfig().Timeout
	}
	if cfg.TopologyEvery <= 0 {
		cfg.TopologyEvery = DefaultConfig().TopologyEvery
	}
	if cfg.SystemMemory == nil {
		cfg.SystemMemory = systemMemory
	}
	s := &Sampler{lib: lib, cfg: cfg, sem: make(chan struct{}, 1), now: time.Now}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	if _, err := call(ctx, s, s.open); err != nil {
		return nil, err
	}
	return s, nil
}

// open initializes NVML and records every device it can reach.
func (s *Sampler) open(ctx context.Context) (struct{}, error) {
	if ret := s.lib.Init(); ret != nvml.SUCCESS {
		switch ret {
		case nvml.ERROR_LIBRARY_NOT_FOUND:
			return struct{}{}, ErrNoDriver
		case nvml.ERROR_DRIVER_NOT_LOADED:
			return struct{}{}, fmt.Errorf("%w: %v", ErrNoDriver, ret)
		}
		return struct{}{}, fmt.Errorf("init nvml: %w", ret)
	}
	err := s.openDevices()
	if err == nil && ctx.Err() != nil { // Open gave up waiting: nobody will Close
		err = ctx.Err()
	}
	if err != nil {
		s.lib.Shutdown()
	}
	return struct{}{}, err
}

func (s *Sampler) openDevices() error {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("count gpus: %w", ret)
	}
	var errs []error
	var lost []int // positions in s.devs of GPUs lost already
	for i := range n {
		d, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret == nvml.ERROR_GPU_IS_LOST { // listed, as lost: its index is known, nothing else
			lost = append(lost, len(s.devs))
			s.infos = append(s.infos, Info{Index: i})
			s.devs = append(s.devs, nil)
			continue
		}
		if ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("open gpu %d: %w", i, ret))
			continue
		}
		s.infos = append(s.infos, readInfo(i, d, s.cfg.SystemMemory))
		s.devs = append(s.devs, d)
	}
	if n > 0 && len(s.devs) == 0 { // some GPUs may be hidden from us; none is an error
		return errors.Join(errs...)
	}
	readTopology(s.infos, s.devs)
	s.health = make([]health, len(s.devs))
	s.state = make([]devState, len(s.devs))
	for i := range s.state {
		s.state[i] = newDevState(s.cfg.SystemMemory)
	}
	for _, k := range lost {
		s.health[k].lost, s.health[k].lostReason = true, "GPU is lost (open: ERROR_GPU_IS_LOST)"
	}
	s.openEvents()
	return nil
}

// openEvents registers every device for XID events. Where NVML has no
// event set, or a GPU does not support XID events (an old GPU, a
// virtualized one), XIDs go unseen there and the rest still works.
func (s *Sampler) openEvents() {
	set, ret := s.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		s.evErr = fmt.Sprintf("create event set: %v", ret)
		return
	}
	registered := 0
	for _, d := range s.devs {
		if d == nil { // lost
			continue
		}
		if types, ret := d.GetSupportedEventTypes(); ret == nvml.SUCCESS && types&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		if d.RegisterEvents(nvml.EventTypeXidCriticalError, set) == nvml.SUCCESS {
			registered++
		}
	}
	if registered == 0 {
		set.Free()
		s.evErr = "no GPU supports XID events"
		return
	}
	s.events = set
}

// drainEvents reads the XID events waiting, without waiting for more, and
// reports whether there were any.
func (s *Sampler) drainEvents(ctx context.Context) bool {
	if s.events == nil {
		return false
	}
	seen := false
	for range maxEvents {
		if ctx.Err() != nil {
			return seen
		}
		ev, ret := s.events.Wait(0)
		if ret != nvml.SUCCESS { // ERROR_TIMEOUT: none left
			return seen
		}
		if ev.EventType&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		if i := s.deviceOf(ev.Device); i >= 0 {
			s.health[i].xid(ev.EventData)
			seen = true
		}
	}
	return seen
}

// deviceOf returns the index in s.devs of the device an event names, or -1.
func (s *Sampler) deviceOf(d nvml.Device) int {
	if d == nil {
		return -1
	}
	for i, dev := range s.devs {
		if dev != nil && any(dev) == any(d) {
			return i
		}
	}
	uuid, ret := d.GetUUID()
	if ret != nvml.SUCCESS {
		return -1
	}
	return slices.IndexFunc(s.infos, func(in Info) bool { return in.UUID == uuid })
}

// Devices lists the GPUs found by Open, by NVML index, and those that
// appeared since; a recheck updates their topology and MIG (recheck.go).
// A nil Sampler has none.
func (s *Sampler) Devices() []Info {
	if s == nil {
		return nil
	}
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	return slices.Clone(s.infos)
}

// DevicesGeneration counts the changes of Devices since Open: a GPU that
// appeared or was lost, a change of MIG mode or instances.
func (s *Sampler) DevicesGeneration() uint64 {
	if s == nil {
		return 0
	}
	return s.gen.Load()
}

// Sample reads every GPU once. It returns when ctx ends or the Sampler's
// Timeout passes even where the driver does not; the next call then waits
// for the stuck one. A nil Sampler returns ErrNoDriver.
func (s *Sampler) Sample(ctx context.Context) ([]Stats, error) {
	if s == nil {
		return nil, ErrNoDriver
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	stats, err := call(ctx, s, s.read)
	if err != nil {
		return nil, fmt.Errorf("sample gpus: %w", err)
	}
	return stats, nil
}

func (s *Sampler) read(ctx context.Context) ([]Stats, error) {
	if s.closed {
		return nil, ErrClosed
	}
	s.drainEvents(ctx)
	s.takeWanted()
	now := s.now()
	s.recheckDue(now)
	lost := s.lostCount()
	out := make([]Stats, 0, len(s.devs))
	for i, d := range s.devs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, readStats(s.infos[i], d, &s.health[i], &s.state[i], now))
	}
	if s.lostCount() > lost {
		s.recheck(now, true) // its links go
	}
	// An XID posted while the GPUs were read (the driver posts it as the
	// fault is found) joins this sample, not the next one.
	if s.drainEvents(ctx) {
		for i := range out {
			s.health[i].assessXIDs(&out[i])
		}
	}
	return out, nil
}

// ReadEnergy makes the next Sample read the energy counters of the GPUs
// with uuids, as it does once a minute: a grant began or ended there, so
// the figures at its edges are the counter's own. It never waits for NVML.
func (s *Sampler) ReadEnergy(uuids ...string) {
	if s == nil {
		return
	}
	s.wantMu.Lock()
	defer s.wantMu.Unlock()
	if s.want == nil {
		s.want = map[string]bool{}
	}
	for _, u := range uuids {
		s.want[u] = true
	}
}

// takeWanted marks the counters ReadEnergy asked for as due.
func (s *Sampler) takeWanted() {
	s.wantMu.Lock()
	want := s.want
	s.want = nil
	s.wantMu.Unlock()
	for i, in := range s.infos {
		if want[in.UUID] {
			s.state[i].energy.want = true
		}
	}
}

// Clear forgets the faults seen so far on the GPU with uuid (an owner
// cleared its quarantine) and returns them as an Ack to keep, for
// Acknowledge after a restart. A new fault quarantines the GPU again; a
// lost GPU stays lost.
func (s *Sampler) Clear(ctx context.Context, uuid string) (Ack, error) {
	if s == nil {
		return Ack{}, ErrNoDriver
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	return call(ctx, s, func(context.Context) (Ack, error) {
		i := slices.IndexFunc(s.infos, func(in Info) bool { return in.UUID == uuid })
		if i < 0 {
			return Ack{}, fmt.Errorf("no GPU %s here", uuid)
		}
		h := &s.health[i]
		a := Ack{ECCUncorrected: h.eccLast, RetiredPending: h.pendingLast, RemapFailed: h.failedLast}
		h.critical = nil
		h.ack = a
		return a, nil
	})
}

// Acknowledge accepts the faults of a, kept from an earlier Clear, on the
// GPU with uuid: what an owner cleared stays cleared across restarts.
func (s *Sampler) Acknowledge(ctx context.Context, uuid string, a Ack) error {
	if s == nil {
		return ErrNoDriver
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	_, err := call(ctx, s, func(context.Context) (struct{}, error) {
		if i := slices.IndexFunc(s.infos, func(in Info) bool { return in.UUID == uuid }); i >= 0 {
			s.health[i].ack = a
		}
		return struct{}{}, nil
	})
	return err
}

// Close shuts NVML down. It is idempotent; a nil Sampler has nothing to close.
func (s *Sampler) Close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	_, err := call(ctx, s, func(context.Context) (struct{}, error) {
		if s.closed {
			return struct{}{}, nil
		}
		s.closed = true
		if s.events != nil {
			s.events.Free()
			s.events = nil
		}
		if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
			return struct{}{}, fmt.Errorf("shut down nvml: %w", ret)
		}
		return struct{}{}, nil
	})
	return err
}

// call runs fn on a goroutine of its own once no other call is running, and
// returns when fn does or when ctx ends, whichever is first. A call that ctx
// abandons keeps the semaphore until the driver lets it return.
func call[T any](ctx context.Context, s *Sampler, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return zero, fmt.Errorf("wait for a stuck nvml call: %w", ctx.Err())
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-s.sem }()
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, fmt.Errorf("call nvml: %w", ctx.Err())
	}
}
