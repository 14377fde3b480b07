// Package window serves labpool's desktop window. The page is the UI that
// `labpool web` serves, and it calls the same local API: a Window is the
// Handler of the Wails AssetServer, and passes every /api/ call of the page
// to the daemon's unix socket (web.SocketProxy), where app/web serves
// web.Routes. Nothing here is written per API call: a new route reaches the
// window as it reaches the CLI.
//
// What the window adds to the calls it passes on:
//   - replies streamed without a length (a job's log, image progress) reach
//     the page at most once per Config.Flush: the first piece at once, then
//     what arrived meanwhile in one write;
//   - /api/v1/events is coalesced: once per Flush at most, the latest event
//     of each kind (of each node, for samples);
//   - /window/selftest is the self-test of the real window (Config.SelfTest).
//
// Only the window's own page reaches the wails:// scheme, so the handler
// asks for no token (`labpool web`, on loopback TCP, keeps web.Guard), and
// the window may call what the unix socket serves, /api/v1/policy included:
// like the CLI, it is this machine's user at its console.
//
// Run owns the streams: when its ctx ends it ends every call in flight, and
// returns once their handlers have returned.
package window

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// Config is a window's settings.
type Config struct {
	// SelfTest is the file the page's self-test report goes to; "" when off.
	SelfTest string
	// SelfTestJob names a job whose log the self-test follows ("" = none).
	SelfTestJob string
	// SelfTestAlert makes the page wait for an active alert on the Alerts
	// tab before it reports (the test fires one).
	SelfTestAlert bool
	// Flush is how often, at most, a stream writes to the page.
	Flush time.Duration
	// Keepalive is how often the event stream tells the page it is alive
	// (and learns whether the page still reads it).
	Keepalive time.Duration
	// Drain is how long Run waits for the calls in flight to end.
	Drain time.Duration
	// SelfTestWait is how long the page may take to send its self-test
	// report; SelfTestLinger how long the window stays open after it (for a
	// screenshot).
	SelfTestWait, SelfTestLinger time.Duration
	// StartDaemon starts this machine's daemon again (the background agent
	// the window started when it opened); nil when the window cannot (the
	// system agent, run by the service manager).
	StartDaemon func(ctx context.Context) error
	// DataDir, when not "", is the daemon's data directory: while the
	// daemon is stopped the page shows its replica's last known pool.
	DataDir string
}

// DefaultConfig returns the window's settings.
func DefaultConfig() Config {
	return Config{Flush: 200 * time.Millisecond, Keepalive: 15 * time.Second, Drain: 2 * time.Second,
		SelfTestWait: 90 * time.Second, SelfTestLinger: 5 * time.Second}
}

// Page is the window as Run drives it: the Wails runtime in main.
// Its methods must not block.
type Page interface {
	Quit() // closes the window
}

// SelfTestPath is where the page asks whether to run its self-test (GET,
// answered {"enabled": bool, "job": name}) and sends its report (POST, JSON).
const SelfTestPath = "/window/selftest"

// DaemonPath is where the page asks whether the window can start the
// daemon (GET, answered {"can_start": bool}) and asks it to (POST).
const DaemonPath = "/window/daemon"

// eventsPath is the local API's event stream, coalesced for the page.
const eventsPath = "/api/v1/events"

// Window serves the page's calls; see the package doc.
type Window struct {
	cfg        Config
	proxy      *web.SocketProxy // to the daemon's unix socket
	calls      calls
	selfTested chan struct{} // closed once by the first report
	reported   sync.Once
}

// New returns the window over the daemon listening on socket.
func New(socket string, cfg Config) *Window {
	return newWindow(web.SocketTransport(socket), cfg)
}

func newWindow(daemon http.RoundTripper, cfg Config) *Window {
	w := &Window{cfg: cfg, selfTested: make(chan struct{})}
	w.proxy = &web.SocketProxy{Daemon: daemon, Relay: w.relay}
	if cfg.DataDir != "" {
		w.proxy.LastKnown = web.LastKnown(cfg.DataDir)
	}
	return w
}

// ErrClosed means the window is closing.
var ErrClosed = errors.New("the window is closing")

// Run serves until ctx is cancelled and quits the window once a self-test
// has reported. It then ends the calls in flight and waits for them (for
// Config.Drain at most: a page that stopped reading can hold a write).
func (w *Window) Run(ctx context.Context, page Page) error {
	if w.cfg.SelfTest != "" {
		w.awaitSelfTest(ctx, page)
	}
	<-ctx.Done()
	if n := w.calls.close(w.cfg.Drain); n > 0 {
		return fmt.Errorf("%d calls of the page still running %v after the window closed", n, w.cfg.Drain)
	}
	return nil
}

// awaitSelfTest quits the window SelfTestLinger after the page reported,
// or after SelfTestWait with a report that says the page sent none.
func (w *Window) awaitSelfTest(ctx context.Context, page Page) {
	wait := time.NewTimer(w.cfg.SelfTestWait)
	defer wait.Stop()
	select {
	case <-w.selfTested:
		linger := time.NewTimer(w.cfg.SelfTestLinger) // time for a screenshot of the window
		defer linger.Stop()
		select {
		case <-linger.C:
		case <-ctx.Done():
			return
		}
	case <-wait.C:
		msg := fmt.Sprintf(`{"error":"the page sent no self-test report in %v"}`, w.cfg.SelfTestWait)
		os.WriteFile(w.cfg.SelfTest, []byte(msg), 0o644)
	case <-ctx.Done():
		return
	}
	page.Quit()
}

// ServeHTTP serves a request of the page that is not one of its files.
func (w *Window) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == SelfTestPath:
		w.selfTest(rw, r)
	case r.URL.Path == DaemonPath:
		w.daemon(rw, r)
	case strings.HasPrefix(r.URL.Path, "/api/"):
		w.call(rw, r)
	default:
		web.WriteError(rw, &app.APIError{Status: http.StatusNotFound, Code: "not_found",
			Message: "the window has no page " + r.URL.Path})
	}
}

// call passes an API call to the daemon and its reply to the page; Run
// ends it.
func (w *Window) call(rw http.ResponseWriter, r *http.Request) {
	ctx, done, ok := w.calls.start(r.Context())
	if !ok {
		web.WriteError(rw, &app.APIError{Status: http.StatusServiceUnavailable, Code: "unreachable", Message: ErrClosed.Error()})
		return
	}
	defer done()
	w.proxy.ServeHTTP(rw, r.WithContext(ctx))
}

// relay writes a reply of the daemon to the page: events coalesced and
// streams paced, the rest as it arrives.
func (w *Window) relay(rw http.ResponseWriter, r *http.Request, resp *http.Response) {
	switch {
	case r.URL.Path == eventsPath:
		io.WriteString(rw, "retry: 1000\n: labpool window events\n\n")
		relay(r.Context(), rw, resp.Body, newCoalescer(), w.cfg.Flush, w.cfg.Keepalive)
	case streamed(resp):
		relay(r.Context(), rw, resp.Body, &text{}, w.cfg.Flush, 0)
	default:
		web.CopyReply(rw, resp)
	}
}

// streamed reports whether a reply is a stream: without a length, and not
// a JSON reply (which the daemon sends without one when it is long).
func streamed(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return resp.ContentLength < 0 && mt != "application/json"
}

// selfTest tells the page whether to run its self-test and saves its report.
func (w *Window) selfTest(rw http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(struct {
			Enabled bool   `json:"enabled"`
			Job     string `json:"job,omitempty"`
			Alert   bool   `json:"alert,omitempty"`
		}{w.cfg.SelfTest != "", w.cfg.SelfTestJob, w.cfg.SelfTestAlert})
	case http.MethodPost:
		if w.cfg.SelfTest == "" {
			web.WriteError(rw, fmt.Errorf("%w: the self-test is off", app.ErrInvalid))
			return
		}
		report, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || !json.Valid(report) {
			web.WriteError(rw, fmt.Errorf("%w: the self-test report is not JSON", app.ErrInvalid))
			return
		}
		if err := os.WriteFile(w.cfg.SelfTest, report, 0o644); err != nil {
			web.WriteError(rw, err)
			return
		}
		w.reported.Do(func() { close(w.selfTested) })
		rw.WriteHeader(http.StatusNoContent)
	default:
		web.WriteError(rw, &app.APIError{Status: http.StatusMethodNotAllowed, Code: "invalid",
			Message: r.Method + " " + SelfTestPath + ": GET or POST"})
	}
}

// daemon tells the page whether the window can start the daemon, and
// starts it when asked. Starting one that already answers is harmless: the
// starter waits for the socket to answer.
func (w *Window) daemon(rw http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(struct {
			CanStart bool `json:"can_start"`
		}{w.cfg.StartDaemon != nil})
	case http.MethodPost:
		if w.cfg.StartDaemon == nil {
			web.WriteError(rw, &app.APIError{Status: http.StatusConflict, Code: "invalid",
				Message: "this machine's labpool agent is a system service: start it with the service manager"})
			return
		}
		ctx, done, ok := w.calls.start(r.Context())
		if !ok {
			web.WriteError(rw, &app.APIError{Status: http.StatusServiceUnavailable, Code: "unreachable", Message: ErrClosed.Error()})
			return
		}
		defer done()
		if err := w.cfg.StartDaemon(ctx); err != nil {
			web.WriteError(rw, &app.APIError{Status: http.StatusInternalServerError, Code: "error",
				Message: "starting the labpool daemon: " + err.Error()})
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	default:
		web.WriteError(rw, &app.APIError{Status: http.StatusMethodNotAllowed, Code: "invalid",
			Message: r.Method + " " + DaemonPath + ": GET or POST"})
	}
}

// calls are the API calls in flight, each with its cancel.
type calls struct {
	mu      sync.Mutex // guards the fields below
	closed  bool
	cancels map[*context.CancelFunc]struct{}
	idle    chan struct{} // made by close, closed when the last call returned
}

// start registers a call: ctx ends with parent or when close is called;
// done must be called when the call's handler returns. ok is false once
// closed.
func (c *calls) start(parent context.Context) (ctx context.Context, done func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(parent)
	key := &cancel
	if c.cancels == nil {
		c.cancels = map[*context.CancelFunc]struct{}{}
	}
	c.cancels[key] = struct{}{}
	return ctx, func() {
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.cancels, key)
		if c.idle != nil && len(c.cancels) == 0 {
			close(c.idle)
			c.idle = nil
		}
	}, true
}

// close ends every call and refuses new ones, waits up to d for their
// handlers to return, and says how many still run.
func (c *calls) close(d time.Duration) int {
	c.mu.Lock()
	c.closed = true
	if len(c.cancels) == 0 {
		c.mu.Unlock()
		return 0
	}
	idle := make(chan struct{})
	c.idle = idle
	for cancel := range c.cancels {
		(*cancel)()
	}
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return 0
	case <-t.C:
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.cancels)
	}
}
