package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/labpool/labpool/app"
)

// urlLine is the last line `labpool web` prints.
var urlLine = regexp.MustCompile(`^http://(127\.0\.0\.1|localhost|\[::1\]):[0-9]+/\?token=[A-Za-z0-9_-]{43}$`)

// TestRunWebAttached serves the UI for a (fake) running daemon: the printed
// URL carries the token and the door is guarded.
func TestRunWebAttached(t *testing.T) {
	dir, err := os.MkdirTemp("", "lpweb") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock, err := net.Listen("unix", Socket(dir))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards got
	var got []string  // what reached the daemon
	daemonAPI := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/api/v1/self" || r.Header.Get("X-Test") != "" {
			got = append(got, r.Method+" "+r.URL.Path+" cookie="+r.Header.Get("Cookie")+" auth="+r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(app.Self{ID: "X"})
	})
	go http.Serve(sock, daemonAPI)
	defer sock.Close()

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	assets := fstest.MapFS{"index.html": {Data: []byte("<title>labpool</title>")}}
	go func() {
		done <- runWeb(ctx, Config{DataDir: dir}, "127.0.0.1:0", assets, slog.New(slog.DiscardHandler), pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runWeb: %v", err)
		}
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	line = strings.TrimSpace(line)
	if !urlLine.MatchString(line) {
		t.Fatalf("printed %q; want http://127.0.0.1:PORT/?token=SECRET", line)
	}
	u, _ := url.Parse(line)
	token := u.Query().Get("token")
	base := "http://" + u.Host

	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, host, auth, ctype string) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
		if host != "" {
			req.Host = host
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("X-Test", "1")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, c := range []struct {
		method, path, host, auth, ctype string
		want                            int
	}{
		{"GET", "/api/v1/pool", "", "", "", 401},
		{"GET", "/api/v1/pool", "", token, "", 200},
		{"GET", "/api/v1/pool", "evil.example:" + u.Port(), token, "", 403},
		{"GET", "/", "evil.example:" + u.Port(), "", "", 403},
		{"POST", "/api/v1/pool/create", "", token, "text/plain", 415},
		{"POST", "/api/v1/pool/create", "", token, "application/json", 200},
		{"GET", "/api/v1/policy", "", token, "", 403},
		{"GET", "/", "", "", "", 200},
		{"GET", "/?token=" + token, "", "", "", 303},
	} {
		if st := do(c.method, c.path, c.host, c.auth, c.ctype); st != c.want {
			t.Errorf("%s %s (host %q): %d; want %d", c.method, c.path, c.host, st, c.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"GET /api/v1/pool cookie= auth=", "POST /api/v1/pool/create cookie= auth="}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the daemon saw:\n%s\nwant (no credentials forwarded):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, "replica.db")); err == nil {
		t.Errorf("the attached web opened the replica itself")
	}
}
