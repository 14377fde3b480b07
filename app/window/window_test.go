package window

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/sync/store"
)

// fakeDaemon answers the window's calls in memory (so synctest's clock
// runs): a burst of events every tick, and a log of many small writes.
type fakeDaemon struct {
	events  int           // how many of each kind the event stream sends
	tick    time.Duration // between two of them
	lines   int           // how many lines the log has
	lineGap time.Duration
}

func (f fakeDaemon) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	switch r.URL.Path {
	case eventsPath:
		return stream("text/event-stream", func(w io.Writer) error {
			io.WriteString(w, ": labpool events\n\n")
			for i := range f.events {
				fmt.Fprintf(w, "event: %s\ndata: [{\"n\":%d}]\n\n", app.EventNodes, i)
				for _, node := range []string{"A", "B"} {
					if _, err := fmt.Fprintf(w, "event: %s\ndata: {\"node\":%q,\"i\":%d}\n\n", app.EventSample, node, i); err != nil {
						return err
					}
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(f.tick):
				}
			}
			<-ctx.Done()
			return ctx.Err()
		}), nil
	case "/api/v1/jobs/job1/logs":
		return stream("text/plain; charset=utf-8", func(w io.Writer) error {
			for i := range f.lines {
				if _, err := fmt.Fprintf(w, "line %d ✓\n", i); err != nil {
					return err
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(f.lineGap):
				}
			}
			return nil
		}), nil
	case "/api/v1/nodes": // a long JSON reply: sent without a length
		return stream("application/json", func(w io.Writer) error {
			for i := range 3 {
				fmt.Fprintf(w, "[%d", i)
				time.Sleep(10 * time.Millisecond)
			}
			_, err := io.WriteString(w, "]]]\n")
			return err
		}), nil
	}
	return &http.Response{StatusCode: http.StatusNotFound, ContentLength: -1,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(`{"code":"not_found","message":"no such call"}`))}, nil
}

// stream answers a reply of unknown length written by fn.
func stream(contentType string, fn func(w io.Writer) error) *http.Response {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(fn(pw)) }()
	return &http.Response{StatusCode: http.StatusOK, ContentLength: -1,
		Header: http.Header{"Content-Type": {contentType}}, Body: pr}
}

// page records what the window writes to the page, with when.
type page struct {
	header http.Header
	mu     sync.Mutex // guards status and writes
	status int
	writes []pageWrite
}

type pageWrite struct {
	at   time.Time
	text string
}

func newPage() *page { return &page{header: http.Header{}} }

func (p *page) Header() http.Header { return p.header }
func (p *page) WriteHeader(code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status == 0 {
		p.status = code
	}
}
func (p *page) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, pageWrite{time.Now(), string(b)})
	return len(b), nil
}
func (p *page) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, w := range p.writes {
		b.WriteString(w.text)
	}
	return b.String()
}

type quitter struct{ quit chan struct{} }

func (q quitter) Quit() { close(q.quit) }

// serve runs one call of the page through w until it returns or cancel.
func serve(w *Window, method, target string) (*page, context.CancelFunc, <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, method, target, nil)
	p := newPage()
	done := make(chan struct{})
	go func() { defer close(done); w.ServeHTTP(p, r) }()
	return p, cancel, done
}

func TestEventsCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		w := newWindow(fakeDaemon{events: 100, tick: 10 * time.Millisecond}, cfg)
		start := time.Now()
		p, cancel, done := serve(w, "GET", eventsPath)
		time.Sleep(2 * time.Second) // the events end after 1 s
		cancel()
		<-done

		if ct := p.header.Get("Content-Type"); ct != "text/event-stream" || p.status != http.StatusOK {
			t.Fatalf("events answered %d %q", p.status, ct)
		}
		perSecond := int(time.Second/cfg.Flush) + 1
		writes := 0
		for _, w := range p.writes {
			if w.at.Sub(start) < time.Second {
				writes++
			}
		}
		if writes > perSecond+1 { // +1: the stream's first line
			t.Errorf("%d writes to the page in the first second, want at most %d", writes, perSecond+1)
		}
		count := map[string]int{}
		last := map[string]string{}
		err := web.ReadSSE(strings.NewReader(p.text()), func(name string, data json.RawMessage) {
			key := name
			if name == app.EventSample {
				var s struct{ Node string }
				json.Unmarshal(data, &s)
				key += " " + s.Node
			}
			count[key]++
			last[key] = string(data)
		})
		if err != io.ErrUnexpectedEOF {
			t.Fatalf("the page's event stream: %v", err)
		}
		t.Logf("%d writes to the page in the first second; events by kind: %v", writes, count)
		for key, n := range count {
			if n > 2*perSecond {
				t.Errorf("%d events %q in a stream of 1 s, want at most %d", n, key, 2*perSecond)
			}
		}
		if count[app.EventNodes] < 3 {
			t.Errorf("%d %s events, want the view kept up to date", count[app.EventNodes], app.EventNodes)
		}
		for _, node := range []string{"A", "B"} {
			if want := fmt.Sprintf(`{"node":%q,"i":99}`, node); last[app.EventSample+" "+node] != want {
				t.Errorf("last sample of %s = %s, want %s", node, last[app.EventSample+" "+node], want)
			}
		}
	})
}

func TestLogPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		src := fakeDaemon{lines: 500, lineGap: 2 * time.Millisecond}
		w := newWindow(src, cfg)
		start := time.Now()
		p, cancel, done := serve(w, "GET", "/api/v1/jobs/job1/logs?follow=1&tail=0")
		defer cancel()
		<-done // the log ends after 1 s

		var want strings.Builder
		for i := range src.lines {
			fmt.Fprintf(&want, "line %d ✓\n", i)
		}
		if got := p.text(); got != want.String() {
			t.Errorf("the page got %d bytes of log, want the %d written, in order", len(got), want.Len())
		}
		if len(p.writes) == 0 || p.writes[0].at != start {
			t.Fatalf("writes %v: want the first line at once", p.writes)
		}
		for i := 1; i < len(p.writes); i++ {
			if gap := p.writes[i].at.Sub(p.writes[i-1].at); gap < cfg.Flush {
				t.Errorf("write %d came %v after the one before, want at least %v", i, gap, cfg.Flush)
			}
		}
		t.Logf("%d writes to the page for a log of %d lines", len(p.writes), src.lines)
		if n := len(p.writes); n > int(time.Second/cfg.Flush)+2 {
			t.Errorf("%d writes for a log of 1 s", n)
		}
	})
}

// TestJSONNotPaced checks that a JSON reply of unknown length reaches the
// page as it arrives: only streams are paced.
func TestJSONNotPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWindow(fakeDaemon{}, DefaultConfig())
		start := time.Now()
		p, cancel, done := serve(w, "GET", "/api/v1/nodes")
		defer cancel()
		<-done
		if got := p.text(); got != "[0[1[2]]]\n" {
			t.Errorf("the page got %q", got)
		}
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Errorf("a 30 ms reply took %v to reach the page", d)
		}
	})
}

// TestLogSlowPage checks that a stream holds at most maxText for a page
// that does not read, and loses nothing.
func TestLogSlowPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		line := strings.Repeat("x", 1023) + "\n"
		go func() {
			for range 4 * maxText / len(line) {
				if _, err := io.WriteString(pw, line); err != nil {
					return
				}
			}
			pw.Close()
		}()
		slow := &slowPage{release: make(chan struct{})}
		b := &text{}
		done := make(chan error, 1)
		go func() { done <- relay(t.Context(), slow, pr, b, time.Millisecond, 0) }()
		synctest.Wait() // the page holds its first write; the reader fills the batch
		b.mu.Lock()
		held := b.buf.Len()
		b.mu.Unlock()
		if held > maxText+32<<10 {
			t.Errorf("the batch holds %d bytes for a page that does not read, want at most %d", held, maxText+32<<10)
		}
		close(slow.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if slow.n != 4*maxText/len(line)*len(line) {
			t.Errorf("the page got %d bytes, want %d", slow.n, 4*maxText/len(line)*len(line))
		}
	})
}

type slowPage struct {
	release chan struct{}
	n       int
}

func (s *slowPage) Write(p []byte) (int, error) {
	<-s.release
	s.n += len(p)
	return len(p), nil
}

func TestRunEndsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWindow(fakeDaemon{events: 1, tick: time.Millisecond}, DefaultConfig())
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx, quitter{make(chan struct{})}) }()
		_, stop, done := serve(w, "GET", eventsPath)
		defer stop()
		synctest.Wait()
		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
		select {
		case <-done:
		default:
			t.Fatal("Run returned before the event stream it serves")
		}
		p, _, done := serve(w, "GET", "/api/v1/nodes")
		<-done
		if p.status != http.StatusServiceUnavailable || !strings.Contains(p.text(), ErrClosed.Error()) {
			t.Errorf("a call after Run: %d %s", p.status, p.text())
		}
	})
}

func TestSelfTest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.SelfTest = filepath.Join(t.TempDir(), "report.json")
		cfg.SelfTestJob = "ticker"
		w := newWindow(fakeDaemon{}, cfg)
		q := quitter{make(chan struct{})}
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx, q) }()

		p, _, done := serve(w, "GET", SelfTestPath)
		<-done
		if got := strings.TrimSpace(p.text()); got != `{"enabled":true,"job":"ticker"}` {
			t.Errorf("GET %s = %s", SelfTestPath, got)
		}
		for _, body := range []string{"not json", `{"cards":1}`} {
			r := httptest.NewRequest("POST", SelfTestPath, strings.NewReader(body))
			p := newPage()
			w.ServeHTTP(p, r)
			want := http.StatusNoContent
			if body == "not json" {
				want = http.StatusBadRequest
			}
			if p.status != want {
				t.Errorf("POST %q: %d %s, want %d", body, p.status, p.text(), want)
			}
		}
		reported := time.Now()
		<-q.quit
		if d := time.Since(reported); d != cfg.SelfTestLinger {
			t.Errorf("the window quit %v after the report, want %v", d, cfg.SelfTestLinger)
		}
		if b, _ := os.ReadFile(cfg.SelfTest); string(b) != `{"cards":1}` {
			t.Errorf("report file %q", b)
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	})
}

// TestCallsReachRoutes runs the page's calls through the window to a real
// daemon's local API (web.Handler on a unix socket): what the window
// answers is what the daemon answers.
func TestCallsReachRoutes(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	self := app.Self{ID: "self-id", ShortID: "SELF-AAAA", Name: "desk", APIVersion: app.APIVersion}
	svc := apptest.NewService(db, self, nil, nil)
	sock := filepath.Join(t.TempDir(), "labpool.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: web.Handler(svc, nil, slog.New(slog.DiscardHandler))}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		<-served
	}()

	w := New(sock, DefaultConfig())
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx, quitter{make(chan struct{})}) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	client := web.NewClient(sock)
	for _, tc := range []struct{ method, target, body string }{
		{"GET", "/api/v1/self", ""},
		{"GET", "/api/v1/nodes", ""},
		{"GET", "/api/v1/history?node=nobody&seconds=60", ""},
		{"GET", "/api/v1/no/such/call", ""},
		{"POST", "/api/v1/pool/join", `{"code":""}`},
		{"POST", "/api/v1/pool/join", `not json`},
		// Local to this machine, as on the unix socket: the window is its
		// user at its console (`labpool web` refuses it: web.GuardConfig).
		{"GET", "/api/v1/policy", ""},
	} {
		t.Run(tc.method+" "+tc.target+" "+tc.body, func(t *testing.T) {
			direct := httptest.NewRecorder()
			web.Handler(svc, nil, slog.New(slog.DiscardHandler)).ServeHTTP(direct, httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body)))
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			p := newPage()
			w.ServeHTTP(p, r)
			if p.status != direct.Code || p.text() != direct.Body.String() {
				t.Errorf("through the window: %d %s\ndirect: %d %s", p.status, p.text(), direct.Code, direct.Body.String())
			}
			if got, want := p.header.Get("Content-Type"), direct.Header().Get("Content-Type"); got != want {
				t.Errorf("Content-Type %q, want %q", got, want)
			}
		})
	}
	var got app.Self
	p := newPage()
	w.ServeHTTP(p, httptest.NewRequest("GET", "/api/v1/self", nil))
	json.Unmarshal([]byte(p.text()), &got)
	want, err := client.Self(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("self through the window (-client +window):\n%s", diff)
	}
}

func TestDaemonUnreachable(t *testing.T) {
	w := New(filepath.Join(t.TempDir(), "nobody.sock"), DefaultConfig())
	for _, target := range []string{"/api/v1/nodes", eventsPath} {
		p := newPage()
		w.ServeHTTP(p, httptest.NewRequest("GET", target, nil))
		var e app.Error
		if err := json.Unmarshal([]byte(p.text()), &e); err != nil || p.status != http.StatusBadGateway || e.Code != "unreachable" {
			t.Errorf("%s with no daemon: %d %s, want 502 unreachable", target, p.status, p.text())
		}
	}
	p := newPage()
	w.ServeHTTP(p, httptest.NewRequest("GET", "/index.html", nil))
	if p.status != http.StatusNotFound {
		t.Errorf("a page that is not a file: %d", p.status)
	}
}

// TestStartDaemon: with the daemon stopped the page can ask the window to
// start it again where the window can (the background agent it started),
// and is told it cannot where the agent is a system service.
func TestStartDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nobody.sock")
	tests := []struct {
		name      string
		start     func(ctx context.Context) error
		canStart  bool
		postCode  int
		wantCalls int
	}{
		{name: "background agent", start: func(context.Context) error { return nil }, canStart: true, postCode: http.StatusNoContent, wantCalls: 1},
		{name: "system agent", canStart: false, postCode: http.StatusConflict},
		{name: "start fails", start: func(context.Context) error { return fmt.Errorf("no agent binary") }, canStart: true, postCode: http.StatusInternalServerError, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			cfg := DefaultConfig()
			if tt.start != nil {
				cfg.StartDaemon = func(ctx context.Context) error { calls++; return tt.start(ctx) }
			}
			w := New(sock, cfg)
			p := newPage()
			w.ServeHTTP(p, httptest.NewRequest("GET", DaemonPath, nil))
			var got struct {
				CanStart bool `json:"can_start"`
			}
			if err := json.Unmarshal([]byte(p.text()), &got); err != nil || got.CanStart != tt.canStart {
				t.Errorf("GET %s: %s, want can_start %v", DaemonPath, p.text(), tt.canStart)
			}
			p = newPage()
			w.ServeHTTP(p, httptest.NewRequest("POST", DaemonPath, nil))
			if p.status != tt.postCode || calls != tt.wantCalls {
				t.Errorf("POST %s: %d %s (%d starts), want %d (%d starts)", DaemonPath, p.status, p.text(), calls, tt.postCode, tt.wantCalls)
			}
			if tt.postCode >= 400 {
				var e app.Error
				if err := json.Unmarshal([]byte(p.text()), &e); err != nil || e.Message == "" {
					t.Errorf("POST %s refused without a message: %s", DaemonPath, p.text())
				}
			}
		})
	}
}
