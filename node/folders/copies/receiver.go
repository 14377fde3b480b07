package copies

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/procs"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/peerapi"
)

// Config is a Receiver's settings.
type Config struct {
	// Self is this machine's device ID (text form).
	Self string
	// Kept is how many of the copies started here are listed (the newest).
	Kept int
	// MaxWait bounds one wait for a copy's end, whoever asks.
	MaxWait time.Duration
	// OfferLinger is how long a local source stays offered to a receiver
	// that does not answer (a receiver restarted mid-copy forgets the copy).
	OfferLinger time.Duration
	// Retry is the pause before asking an unreachable receiver again.
	Retry time.Duration
	// Stall and Lost are each copy's Pull.Stall and Pull.Lost (roam.go).
	Stall, Lost time.Duration
}

// DefaultConfig returns the settings of a daemon; Self is left to set.
func DefaultConfig() Config {
	return Config{Kept: 100, MaxWait: 10 * time.Second, OfferLinger: 2 * time.Minute, Retry: time.Second,
		Stall: DefaultStall, Lost: DefaultLost}
}

// Registry is what a Receiver uses of this machine's shares.
type Registry interface {
	OpenReceiving(dst string, who folders.Caller, g folders.Grant) (*folders.Opened, error)
	Add(s folders.Share) (folders.Share, error)
	Remove(name string) error
	DropTransient(member string)
}

var _ Registry = (*folders.Registry)(nil)

// Store keeps this machine's local settings (sync/store.DB does), where
// the copies started here are listed across restarts.
type Store interface {
	Setting(ctx context.Context, key string) (string, bool, error)
	SetSetting(ctx context.Context, key, value string) error
}

// Dialer returns a client pinned to the member id for bulk bytes; it
// reaches the member at https://node/.
type Dialer interface {
	NodeDataClient(id string) (*http.Client, error)
}

// Members finds the members of the pool and calls their peer API.
type Members interface {
	// Resolve returns the device ID of the member ref names (a name, an
	// ID or its prefix).
	Resolve(ctx context.Context, ref string) (string, error)
	// Do calls the member's peer API (Routes); a refusal is an error.
	peerapi.Doer
}

// Signer signs this machine's grants (folders.Signer does).
type Signer interface {
	Grant(src, folder, path, receiver string, now time.Time) (string, error)
}

var _ Signer = folders.Signer{}

// Deps are the parts a Receiver uses; all but Changed are required.
type Deps struct {
	Folders Registry
	Store   Store
	Dialer  Dialer
	Members Members
	Signer  Signer
	// Changed, if set, is told that a copy wrote into the share folder
	// (its size and file count changed). It runs before Run returns.
	Changed func(ctx context.Context, folder string)
	Log     *slog.Logger
}

// Receiver runs the copies this machine receives and starts copies
// between members. Its methods may be called before Run; a copy starts
// once Run runs.
type Receiver struct {
	cfg  Config
	deps Deps
	jobs chan job      // to Run, which starts each one
	done chan struct{} // closed when Run returns
	stop sync.Once     // closes done

	mu      sync.Mutex // guards list, ended, running, started, loaded
	list    map[string]*Transfer
	ended   map[string]chan struct{} // closed when the copy ends
	running map[string]runningCopy   // by transfer ID, until the copy ends
	started []Record                 // newest last
	loaded  bool                     // started was read from the Store
}

// runningCopy is a copy this machine receives: who asked for it, where it
// reads, and how to end it.
type runningCopy struct {
	member, src string // device IDs
	cancel      context.CancelFunc
}

// job is work a copy hands to Run: run gets Run's ctx, and ctx (its own,
// cancelled by cancel, or when Run's ends).
type job struct {
	ctx    context.Context
	cancel context.CancelFunc
	run    func(runCtx, ctx context.Context)
}

// New returns a Receiver; it starts nothing before Run.
func New(cfg Config, deps Deps) *Receiver {
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	return &Receiver{cfg: cfg, deps: deps, jobs: make(chan job), done: make(chan struct{}),
		list: map[string]*Transfer{}, ended: map[string]chan struct{}{}, running: map[string]runningCopy{}}
}

// Run starts the work of copies until ctx is cancelled, then cancels every
// copy and returns once all their goroutines have exited.
func (r *Receiver) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer func() {
		r.stop.Do(func() { close(r.done) })
		wg.Wait()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case j := <-r.jobs:
			wg.Go(func() {
				defer context.AfterFunc(ctx, j.cancel)()
				defer j.cancel()
				j.run(ctx, j.ctx)
			})
		}
	}
}

// spawn hands run to Run, with a context of its own that cancel ends.
// It fails when Run has returned, or ctx (the caller's) ends first.
func (r *Receiver) spawn(ctx context.Context, jctx context.Context, cancel context.CancelFunc, run func(runCtx, ctx context.Context)) error {
	select {
	case r.jobs <- job{jctx, cancel, run}:
		return nil
	case <-r.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newTransferID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// start runs pull under Run, recording its progress as t, for member
// reading from the node src (CancelOf ends it); done runs once it ends.
// It returns t as it was before the copy ran: from then on the copy writes
// t, under r.mu.
func (r *Receiver) start(ctx context.Context, t *Transfer, pull *Pull, member, src string, done func(runCtx context.Context)) (Transfer, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ended := make(chan struct{})
	r.mu.Lock()
	r.running[t.ID] = runningCopy{member: member, src: src, cancel: cancel}
	r.list[t.ID] = t
	r.ended[t.ID] = ended
	started := *t
	r.mu.Unlock()
	pull.Stall, pull.Lost = r.cfg.Stall, r.cfg.Lost
	pull.OnProgress = func(p Progress) {
		r.mu.Lock()
		t.Progress = p
		r.mu.Unlock()
	}
	err := r.spawn(ctx, cctx, cancel, func(runCtx, ctx context.Context) {
		defer done(runCtx)
		yielded := procs.Yielded()
		r.finish(t, ended, pull, yielded)(pull.Run(ctx))
	})
	if err != nil {
		cancel()
		r.mu.Lock()
		delete(r.running, t.ID)
		delete(r.list, t.ID)
		delete(r.ended, t.ID)
		r.mu.Unlock()
		return Transfer{}, err
	}
	return started, nil
}

// finish returns what records the end of the copy t.
func (r *Receiver) finish(t *Transfer, ended chan struct{}, pull *Pull, yielded time.Duration) func(Progress, error) {
	return func(p Progress, err error) {
		now := time.Now().UTC()
		r.mu.Lock()
		delete(r.running, t.ID)
		t.Progress, t.Finished, t.State = p, &now, "done"
		if err != nil {
			t.State, t.Error = "failed", err.Error()
			if p.Done > 0 && !errors.Is(err, context.Canceled) && !errors.Is(err, folders.ErrFull) {
				t.Error += " (what arrived is kept: the same copy resumes from there)"
			}
		}
		r.mu.Unlock()
		close(ended)
		r.deps.Log.Info("copy ended", "id", t.ID, "src", t.Src, "dst", t.Dst, "state", t.State, "sent", p.Sent, "asked_again", pull.Retries(),
			"yielded", procs.Yielded()-yielded, "err", err) // to urgent work, this machine's whole process (see procs.Yield)
	}
}

// CancelOf ends at once the copies this machine receives that the device
// asked for or reads from, and what this machine offered it (for a device
// removed from the pool). It does not block.
func (r *Receiver) CancelOf(device string) {
	r.deps.Folders.DropTransient(device)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.running {
		if c.member == device || c.src == device {
			c.cancel()
			r.deps.Log.Info("ended a copy of a device removed from the pool", "id", id, "peer", device)
		}
	}
}

// wait is the copy id once it has ended, wait (at most Config.MaxWait)
// has passed or ctx is done.
func (r *Receiver) wait(ctx context.Context, id string, wait time.Duration) (Transfer, error) {
	wait = min(wait, r.cfg.MaxWait)
	r.mu.Lock()
	ended := r.ended[id]
	r.mu.Unlock()
	if ended != nil && wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-ended:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.list[id]
	if !ok {
		return Transfer{}, fmt.Errorf("%w: no transfer %s", ErrNotFound, id)
	}
	return *t, nil
}
