package mps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Daemons runs one control daemon per GPU that holds shares.
type Daemons struct {
	cfg Config
	bin string
	log *slog.Logger

	mu   sync.Mutex         // guards gpus, and serializes control commands
	gpus map[string]*daemon // by GPU UUID: the daemons started, with their holders
}

// daemon is one GPU's control daemon.
type daemon struct {
	gpu     string
	static  bool              // started with -S: shares get SM partitions
	holders map[string]Client // by holder (job ID)
}

// New finds the control program; ErrNoMPS when there is none.
func New(cfg Config) (*Daemons, error) {
	name := cfg.Binary
	if name == "" {
		name = Control
	}
	bin, err := exec.LookPath(name)
	if err == nil && !supported {
		err = errors.New("MPS runs on Linux only")
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoMPS, err)
	}
	if cfg.Dir == "" || !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("mps: the daemons' directory %q is not an absolute path", cfg.Dir)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Daemons{cfg: cfg, bin: bin, log: cfg.Log, gpus: map[string]*daemon{}}, nil
}

// Acquire gives holder a share of gpu (threads, and memBytes of memory, 0
// for no cap), starting the GPU's daemon if this is its first share. A
// holder that holds one already gets it back (an agent that restarted
// adopts its running jobs so).
func (d *Daemons) Acquire(ctx context.Context, gpu, holder string, share float64, memBytes uint64) (Client, error) {
	if err := checkGPU(gpu); err != nil {
		return Client{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	dm := d.gpus[gpu]
	if dm == nil || !d.alive(gpu) { // a share never starts without its daemon
		static, err := d.start(ctx, gpu)
		if err != nil {
			return Client{}, err
		}
		if dm == nil {
			dm = &daemon{gpu: gpu, holders: map[string]Client{}}
			d.gpus[gpu] = dm
		}
		dm.static = static
	}
	if c, ok := dm.holders[holder]; ok {
		return c, nil
	}
	c := Client{GPU: gpu, PipeDir: d.dir(gpu, "pipe"), ShmDir: d.dir(gpu, "shm"), ThreadPercent: ThreadPercent(share), MemBytes: memBytes}
	if dm.static {
		p, err := d.partition(ctx, gpu, share)
		if err != nil {
			d.log.Warn("no static SM partition for a share: it gets its thread percentage instead", "gpu", gpu, "job", holder, "err", err)
		}
		c.Partition = p
	}
	dm.holders[holder] = c
	return c, nil
}

// Adopt takes back holder's share c (its GPU and partition, as the
// client's container recorded them) after the agent restarted: the GPU's
// daemon, which outlived the agent, is kept, or started again.
func (d *Daemons) Adopt(ctx context.Context, holder string, c Client) error {
	if err := checkGPU(c.GPU); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	dm := d.gpus[c.GPU]
	if dm == nil {
		static, err := d.start(ctx, c.GPU)
		if err != nil {
			return err
		}
		dm = &daemon{gpu: c.GPU, static: static, holders: map[string]Client{}}
		d.gpus[c.GPU] = dm
	}
	if _, ok := dm.holders[holder]; !ok {
		c.PipeDir, c.ShmDir = d.dir(c.GPU, "pipe"), d.dir(c.GPU, "shm")
		dm.holders[holder] = c
	}
	return nil
}

// Release ends holder's share of gpu; the GPU's daemon quits when its last
// share leaves. Releasing what is not held is no error.
func (d *Daemons) Release(ctx context.Context, gpu, holder string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dm := d.gpus[gpu]
	if dm == nil {
		return nil
	}
	c, ok := dm.holders[holder]
	if !ok {
		return nil
	}
	delete(dm.holders, holder)
	var errs []error
	if c.Partition != "" {
		if _, err := d.control(ctx, gpu, "sm_partition rm "+gpu+" "+c.Partition); err != nil {
			errs = append(errs, fmt.Errorf("remove the SM partition of job %s on %s: %w", holder, gpu, err))
		}
	}
	if len(dm.holders) == 0 {
		delete(d.gpus, gpu)
		if err := d.quit(ctx, gpu); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Owner is who owns the pipe and shm directories, "uid:gid" ("" where
// they are the agent's own): the user whose clients reach the daemons.
func (d *Daemons) Owner() string {
	if d.cfg.UID < 0 || d.cfg.GID < 0 {
		return ""
	}
	return strconv.Itoa(d.cfg.UID) + ":" + strconv.Itoa(d.cfg.GID)
}

// Holders returns the holders of shares, by GPU.
func (d *Daemons) Holders() map[string][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string][]string{}
	for g, dm := range d.gpus {
		out[g] = slices.Sorted(maps.Keys(dm.holders))
	}
	return out
}

// Check restarts every daemon that holds shares and no longer runs, and
// returns the GPUs whose daemons it restarted. Clients of a daemon that
// died lost their MPS server with it; those that start later reach the
// new one.
func (d *Daemons) Check(ctx context.Context) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var restarted []string
	for _, gpu := range slices.Sorted(maps.Keys(d.gpus)) {
		dm := d.gpus[gpu]
		if d.alive(gpu) {
			continue
		}
		static, err := d.start(ctx, gpu)
		if err != nil {
			d.log.Error("the MPS control daemon of a GPU with shares died and does not start again: its shares run without MPS", "gpu", gpu, "err", err)
			continue
		}
		d.log.Warn("the MPS control daemon of a GPU with shares had died: started again", "gpu", gpu, "jobs", len(dm.holders))
		dm.static = static
		restarted = append(restarted, gpu)
	}
	return restarted
}

// Run checks the daemons every Config.Probe until ctx ends. The daemons
// it leaves running serve containers that outlive the agent; the next
// agent adopts them (Adopt) and quits the rest (Sweep).
func (d *Daemons) Run(ctx context.Context) error {
	t := newTicker(d.cfg.Probe)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			d.Check(ctx)
		}
	}
}

// Sweep tells every daemon under Config.Dir that serves no share to quit:
// those left by an agent whose jobs ended while it was away. Call it once
// the running jobs are adopted.
func (d *Daemons) Sweep(ctx context.Context) error {
	ents, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("read the MPS directory: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, e := range ents {
		gpu := e.Name()
		if _, held := d.gpus[gpu]; held || checkGPU(gpu) != nil || !e.IsDir() {
			continue
		}
		if err := d.quit(ctx, gpu); err != nil {
			errs = append(errs, err)
		} else if d.alive(gpu) {
			errs = append(errs, fmt.Errorf("stop the MPS control daemon of %s: it still runs", gpu))
		}
	}
	return errors.Join(errs...)
}

// quitAll tells every daemon to quit, on a context of its own (Run's has
// ended).
func (d *Daemons) quitAll() {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	defer cancel()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, gpu := range slices.Sorted(maps.Keys(d.gpus)) {
		if err := d.quit(ctx, gpu); err != nil {
			d.log.Warn("stop an MPS control daemon", "gpu", gpu, "err", err)
		}
		delete(d.gpus, gpu)
	}
}

// alive reads the daemon's pid file in its pipe directory and asks the
// kernel whether that process lives.
func (d *Daemons) alive(gpu string) bool {
	b, err := os.ReadFile(filepath.Join(d.dir(gpu, "pipe"), pidFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return running(pid)
}

// dir is one of gpu's directories.
func (d *Daemons) dir(gpu, name string) string { return filepath.Join(d.cfg.Dir, gpu, name) }
