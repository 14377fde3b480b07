package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// TestSocketProxy passes calls to a daemon on a unix socket: the request
// arrives whole without the caller's credentials or hop headers, the reply
// comes back with its status and headers, and a stream arrives line by line
// as the daemon writes it.
func TestSocketProxy(t *testing.T) {
	next := make(chan struct{})
	sock := serveUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Seen", fmt.Sprintf("%s %s q=%s auth=%q cookie=%q x-hop=%q x-keep=%q body=%s",
				r.Method, r.URL.Path, r.URL.Query().Get("q"), r.Header.Get("Authorization"), r.Header.Get("Cookie"),
				r.Header.Get("X-Hop"), r.Header.Get("X-Keep"), body))
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, `{"ok":true}`)
		case "/api/v1/stream":
			w.Header().Set("Content-Type", "text/plain")
			for i := range 3 {
				fmt.Fprintf(w, "line %d\n", i)
				w.(http.Flusher).Flush()
				select {
				case <-next: // the test read the line through the proxy
				case <-r.Context().Done():
					return
				}
			}
		}
	}))
	front := httptest.NewServer(web.NewSocketProxy(sock))
	defer front.Close()

	req, _ := http.NewRequest("POST", front.URL+"/api/v1/echo?q=1", strings.NewReader(`{"a":1}`))
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Cookie", "labpool=secret")
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "one hop")
	req.Header.Set("X-Keep", "kept")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := `POST /api/v1/echo q=1 auth="" cookie="" x-hop="" x-keep="kept" body={"a":1}`
	if got := res.Header.Get("X-Seen"); got != want {
		t.Errorf("the daemon saw %s\nwant %s", got, want)
	}
	if res.StatusCode != http.StatusTeapot || string(body) != `{"ok":true}` || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("reply %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	lines := make(chan string)
	wg.Go(func() {
		defer close(lines)
		req, _ := http.NewRequestWithContext(ctx, "GET", front.URL+"/api/v1/stream", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer res.Body.Close()
		rd := bufio.NewReader(res.Body)
		for {
			l, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case lines <- l:
			case <-ctx.Done():
				return
			}
		}
	})
	for i := range 3 {
		select {
		case l := <-lines:
			if want := fmt.Sprintf("line %d\n", i); l != want {
				t.Fatalf("stream line %d = %q, want %q", i, l, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("line %d of the stream did not come through before the next was written", i)
		}
		next <- struct{}{}
	}
}

// TestSocketProxyUnreachable answers 502 {code "unreachable"} when no
// daemon listens.
func TestSocketProxyUnreachable(t *testing.T) {
	p := web.NewSocketProxy(filepath.Join(t.TempDir(), "nobody.sock"))
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/nodes", nil))
	var e app.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != http.StatusBadGateway || e.Code != "unreachable" {
		t.Errorf("no daemon: %d %s, want 502 unreachable", w.Code, w.Body)
	}
	// The page shows the message as it is: a plain sentence, not the
	// socket's dial error.
	if e.Message != web.DaemonStopped || strings.Contains(e.Message, "dial") {
		t.Errorf("no daemon: message %q, want %q", e.Message, web.DaemonStopped)
	}
}

// TestSocketProxyRelay hands 200 replies to Relay and copies the others.
func TestSocketProxyRelay(t *testing.T) {
	sock := serveUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/ok" {
			web.WriteError(w, app.ErrNotFound)
			return
		}
		io.WriteString(w, "daemon text")
	}))
	p := web.NewSocketProxy(sock)
	p.Relay = func(w http.ResponseWriter, r *http.Request, resp *http.Response) {
		b, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(w, "relayed %s: %s", r.URL.Path, b)
	}
	for path, want := range map[string]string{
		"/api/v1/ok":   "relayed /api/v1/ok: daemon text",
		"/api/v1/gone": `{"code":"not_found","message":"not found"}` + "\n",
	} {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Body.String() != want {
			t.Errorf("%s: %d %q, want %q", path, w.Code, w.Body, want)
		}
	}
}

// TestSocketProxyLastKnown: with the daemon stopped, the page's node list
// is the replica's last known pool (as `labpool nodes` prints it), every
// machine offline and stale; with no replica it stays 502 "unreachable".
func TestSocketProxyLastKnown(t *testing.T) {
	dataDir := t.TempDir()
	db, self := newReplicaAt(t, filepath.Join(dataDir, "replica.db"))
	ctx := t.Context()
	if err := db.SetSetting(ctx, app.SettingSelfID, self.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.SetSetting(ctx, app.SettingSelfName, self.Name); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "stopped.sock")

	p := web.NewSocketProxyOf(sock, dataDir)
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/nodes", nil))
	var nodes []app.Node
	if err := json.Unmarshal(w.Body.Bytes(), &nodes); err != nil || w.Code != http.StatusOK {
		t.Fatalf("nodes with the daemon stopped: %d %s, want 200 and the last known pool", w.Code, w.Body)
	}
	if len(nodes) != 2 {
		t.Errorf("last known pool: %d machines, want 2 (self and peer)", len(nodes))
	}
	for _, n := range nodes {
		if n.Online || !n.Stale {
			t.Errorf("%s: online %v stale %v, want offline and stale", n.Name, n.Online, n.Stale)
		}
	}

	// Other calls still say the daemon is stopped.
	w = httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/pool", nil))
	if w.Code != http.StatusBadGateway {
		t.Errorf("pool with the daemon stopped: %d %s, want 502", w.Code, w.Body)
	}

	// No replica: nothing known, the page reads the stopped daemon.
	w = httptest.NewRecorder()
	web.NewSocketProxyOf(sock, t.TempDir()).ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/nodes", nil))
	var e app.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != http.StatusBadGateway || e.Message != web.DaemonStopped {
		t.Errorf("no replica: %d %s, want 502 %q", w.Code, w.Body, web.DaemonStopped)
	}
}
