// Package window is the Wails adapter of labpool's window: Bindings are the
// methods the page calls (window.go.window.Bindings), each validating,
// delegating to the daemon's local API (app/web's Client) and returning
// (T, error); Run relays the daemon's events and the logs the page follows.
//
// Events reach the page coalesced, at most once per Config.Flush for each
// kind of event (per node for samples), and a job's log as one chunk of all
// the text read since the last flush.
//
// Run returns only after every goroutine it started has exited.
package window

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// Config is a window's settings.
type Config struct {
	// SelfTest is the file the page's self-test report goes to; "" when off.
	SelfTest string
	// Flush is how often coalesced events go to the page.
	Flush time.Duration
	// Retry is how long to wait before reaching the daemon's events again
	// after the stream ended.
	Retry time.Duration
	// SelfTestWait is how long the page may take to send its self-test
	// report; SelfTestLinger how long the window stays open after it (for a
	// screenshot).
	SelfTestWait, SelfTestLinger time.Duration
}

// DefaultConfig returns the window's settings.
func DefaultConfig() Config {
	return Config{Flush: 200 * time.Millisecond, Retry: 500 * time.Millisecond,
		SelfTestWait: 60 * time.Second, SelfTestLinger: 5 * time.Second}
}

// Page is the window as Run drives it: the Wails runtime in main.
// Its methods must not block.
type Page interface {
	Emit(name string, data any) // sends an event to the page
	Quit()                      // closes the window
	Browse(url string)          // opens the system browser
}

// daemon is what Run reads from the local API (*web.Client).
type daemon interface {
	Events(ctx context.Context, fn func(name string, data json.RawMessage)) error
	Logs(ctx context.Context, ref string, follow bool, tail int) (io.ReadCloser, error)
}

var _ daemon = (*web.Client)(nil)

// Bindings are the methods the Wails window calls.
type Bindings struct {
	client     *web.Client
	src        daemon // client, but for tests
	cfg        Config
	pending    *coalescer
	follows    chan follow   // FollowLogs to Run
	done       chan struct{} // closed when Run returns
	browse     chan string   // OpenJob to Run
	selfTested chan struct{} // closed once by the first report
	reported   sync.Once
	logs       logFollows
}

// New returns the bindings over the daemon at client.
func New(client *web.Client, cfg Config) *Bindings {
	b := newBindings(client, cfg)
	b.client = client
	return b
}

func newBindings(src daemon, cfg Config) *Bindings {
	return &Bindings{src: src, cfg: cfg, pending: newCoalescer(), follows: make(chan follow),
		done: make(chan struct{}), browse: make(chan string, 1), selfTested: make(chan struct{})}
}

// ErrClosed means the window is closing.
var ErrClosed = errors.New("the window is closing")

// Run relays the daemon's events and the followed logs to page until ctx is
// cancelled, and quits the window once a self-test has reported.
func (b *Bindings) Run(ctx context.Context, page Page) error {
	defer close(b.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { b.relay(ctx) })
	if b.cfg.SelfTest != "" {
		wg.Go(func() { b.awaitSelfTest(ctx, page) })
	}
	tick := time.NewTicker(b.cfg.Flush)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			b.pending.flush(page)
			return nil
		case <-tick.C:
			b.pending.flush(page)
		case f := <-b.follows:
			wg.Go(func() { b.followLogs(ctx, f) })
		case url := <-b.browse:
			page.Browse(url)
		}
	}
}

// relay passes the daemon's events to the page, reaching them again
// Retry after the stream ends (the daemon restarted or went away).
func (b *Bindings) relay(ctx context.Context) {
	retry := time.NewTicker(b.cfg.Retry)
	defer retry.Stop()
	for ctx.Err() == nil {
		b.src.Events(ctx, b.pending.event) // an error ends the stream: try again
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
	}
}

// awaitSelfTest quits the window SelfTestLinger after the page reported,
// or after SelfTestWait with a report that says the page sent none.
func (b *Bindings) awaitSelfTest(ctx context.Context, page Page) {
	wait := time.NewTimer(b.cfg.SelfTestWait)
	defer wait.Stop()
	select {
	case <-b.selfTested:
		linger := time.NewTimer(b.cfg.SelfTestLinger) // time for a screenshot of the window
		defer linger.Stop()
		select {
		case <-linger.C:
		case <-ctx.Done():
			return
		}
	case <-wait.C:
		msg := fmt.Sprintf(`{"error":"the page sent no self-test report in %v"}`, b.cfg.SelfTestWait)
		os.WriteFile(b.cfg.SelfTest, []byte(msg), 0o644)
	case <-ctx.Done():
		return
	}
	page.Quit()
}

func (b *Bindings) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// Self returns this machine's identity.
func (b *Bindings) Self() (app.Self, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Self(ctx)
}

// Nodes returns every member of the pool.
func (b *Bindings) Nodes() ([]app.Node, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Nodes(ctx)
}

// GPUs returns every GPU of the pool.
func (b *Bindings) GPUs() ([]app.GPU, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.GPUs(ctx)
}

// History returns a node's samples over the last seconds.
func (b *Bindings) History(nodeID string, seconds int) (app.History, error) {
	if nodeID == "" || seconds <= 0 {
		return app.History{}, errors.New("history needs a node and a positive number of seconds")
	}
	ctx, cancel := b.call()
	defer cancel()
	return b.client.History(ctx, nodeID, seconds)
}

// Pool returns the pool this machine belongs to.
func (b *Bindings) Pool() (app.PoolStatus, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Pool(ctx)
}

// CreatePool creates a pool and returns its join code.
func (b *Bindings) CreatePool() (app.JoinCode, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.CreatePool(ctx)
}

// JoinPool joins the pool of code, at addr when multicast does not reach.
func (b *Bindings) JoinPool(code, addr string) (app.PoolStatus, error) {
	if code == "" {
		return app.PoolStatus{}, errors.New("enter the join code printed by `labpool pool create`")
	}
	ctx, cancel := b.call()
	defer cancel()
	return b.client.JoinPool(ctx, app.JoinRequest{Code: code, Addr: addr})
}

// RemoveMember removes a device from the pool.
func (b *Bindings) RemoveMember(id string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.RemoveMember(ctx, id)
}

// Invites lists the pool's invites.
func (b *Bindings) Invites() ([]app.Invite, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Invites(ctx)
}

// CreateInvite makes an invite for role, good for uses joins (0: unlimited)
// for expiresSeconds (0: 24 hours).
func (b *Bindings) CreateInvite(role string, uses int, expiresSeconds int64) (app.NewInvite, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.CreateInvite(ctx, app.InviteRequest{Role: role, Uses: uses, ExpiresSeconds: expiresSeconds})
}

// RevokeInvite ends an invite.
func (b *Bindings) RevokeInvite(id string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.RevokeInvite(ctx, id)
}

// SetRole changes a member's role.
func (b *Bindings) SetRole(id, role string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.SetRole(ctx, id, role)
}

// SelfTestEnabled tells the page to report what it rendered.
func (b *Bindings) SelfTestEnabled() bool { return b.cfg.SelfTest != "" }

// SelfTestReport saves the page's report and closes the window.
func (b *Bindings) SelfTestReport(report string) error {
	if b.cfg.SelfTest == "" {
		return errors.New("self-test is off")
	}
	if !json.Valid([]byte(report)) {
		return fmt.Errorf("self-test report is not JSON")
	}
	if err := os.WriteFile(b.cfg.SelfTest, []byte(report), 0o644); err != nil {
		return err
	}
	b.reported.Do(func() { close(b.selfTested) })
	return nil
}
