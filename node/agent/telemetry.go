package agent

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/internal/procs"
	"github.com/labpool/labpool/node/gpu"
)

// Telemetry samples this machine and fans the samples out to subscribers.
type Telemetry struct {
	cfg   Config
	gpus  GPUSource // nil without a GPU driver
	hosts HostSource
	log   *slog.Logger

	mu      sync.Mutex // guards the fields below
	info    Info
	latest  Sample
	sampled bool // latest holds a sample
	subs    map[chan Sample]struct{}
	state   runState
	errs    map[string]string // last error logged per source, to log changes only
	gen     uint64            // the GPUSource's DevicesGeneration as info.GPUs holds it

	// urgent and urgentFor mark a sample's work urgent: procs.Urgent and
	// procs.UrgentFor (a test's fakes in tests).
	urgent    func() (done func())
	urgentFor func(time.Duration)
}

type runState int

const (
	notStarted runState = iota
	running
	stopped
)

// New returns a Telemetry reading gpus (nil where there is no GPU driver) and
// hosts. It reads the host's Info once, now.
func New(cfg Config, gpus GPUSource, hosts HostSource, log *slog.Logger) *Telemetry {
	def := DefaultConfig()
	if cfg.Interval <= 0 {
		cfg.Interval = def.Interval
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = def.Buffer
	}
	if s, ok := gpus.(*gpu.Sampler); ok && s == nil {
		gpus = nil
	}
	if gpus == nil && cfg.GPUError == "" {
		cfg.GPUError = gpu.ErrNoDriver.Error()
	}
	t := &Telemetry{cfg: cfg, gpus: gpus, hosts: hosts, log: log,
		subs: map[chan Sample]struct{}{}, errs: map[string]string{},
		urgent: procs.Urgent, urgentFor: procs.UrgentFor}
	t.info = Info{ID: cfg.ID, Name: cfg.Name, Version: cfg.Version, StartedAt: time.Now(),
		GPUs: []gpu.Info{}, GPUError: cfg.GPUError}
	if gpus != nil {
		if w, ok := gpus.(devicesWatcher); ok {
			t.gen = w.DevicesGeneration()
		}
		t.info.GPUs = append(t.info.GPUs, gpus.Devices()...)
	}
	hi, err := hosts.Info(context.Background())
	t.info.Host = hi
	t.logChange("host info", err)
	return t
}

// Info returns what changes rarely about this machine.
func (t *Telemetry) Info() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	info := t.info
	info.GPUs = slices.Clone(info.GPUs)
	return info
}

// Latest returns the latest sample, and false before the first one.
func (t *Telemetry) Latest() (Sample, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latest, t.sampled
}

// Run samples every Interval, from now until ctx is cancelled. It can run
// once; when it returns, every subscriber's channel is closed.
func (t *Telemetry) Run(ctx context.Context) error {
	if err := t.setState(notStarted, running); err != nil {
		return err
	}
	defer t.stop()
	tick := beat.NewTicker(t.cfg.Interval)
	defer tick.Stop()
	for {
		t.tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (t *Telemetry) setState(from, to runState) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != from {
		return errors.New("run telemetry: already run")
	}
	t.state = to
	return nil
}

// sampleUrgency is how long after a sample bulk work (a copy) steps aside
// (see procs.Yield) for the sample's subscribers: the recorder writes it,
// the replica sends it to the members that follow this machine. While the
// sample is taken, it does too.
const sampleUrgency = 20 * time.Millisecond

// tick takes one sample and publishes it, unless ctx ended meanwhile.
func (t *Telemetry) tick(ctx context.Context) {
	defer t.urgentFor(sampleUrgency) // then its subscribers record and send it
	defer t.urgent()()
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Interval)
	defer cancel()
	s := Sample{Time: time.Now()}
	hs, err := t.hosts.Sample(ctx)
	s.Host = hs
	t.logChange("host", err)
	s.GPUs, s.GPUError = t.sampleGPUs(ctx)
	if t.cfg.Annotate != nil && len(s.GPUs) > 0 {
		t.cfg.Annotate(s.Time, s.GPUs, &s.Holding)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	t.publish(s)
}

func (t *Telemetry) sampleGPUs(ctx context.Context) ([]gpu.Stats, string) {
	if t.gpus == nil {
		return []gpu.Stats{}, t.cfg.GPUError
	}
	stats, err := t.gpus.Sample(ctx)
	t.logChange("gpus", err)
	if err != nil {
		return []gpu.Stats{}, err.Error()
	}
	t.followDevices()
	return stats, ""
}

// followDevices takes the GPUs again into Info when the GPUSource says
// they changed, and tells DevicesChanged.
func (t *Telemetry) followDevices() {
	w, ok := t.gpus.(devicesWatcher)
	if !ok {
		return
	}
	gen := w.DevicesGeneration()
	t.mu.Lock()
	if gen == t.gen {
		t.mu.Unlock()
		return
	}
	t.gen = gen
	devs := append([]gpu.Info{}, t.gpus.Devices()...)
	t.info.GPUs = devs
	t.mu.Unlock()
	t.log.Info("GPUs changed: topology and MIG read again", "gpus", len(devs))
	if t.cfg.DevicesChanged != nil {
		t.cfg.DevicesChanged(slices.Clone(devs))
	}
}

// logChange logs err when the source's error changes, so that a failure
// repeated every second is logged once, and its end too.
func (t *Telemetry) logChange(source string, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	t.mu.Lock()
	prev := t.errs[source]
	t.errs[source] = msg
	t.mu.Unlock()
	switch {
	case msg == prev:
	case msg != "":
		t.log.Warn("sample "+source, "err", err)
	default:
		t.log.Info("sample "+source+" recovered", "was", prev)
	}
}
