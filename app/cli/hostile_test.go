package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/jobs"
)

// hostileAPI is a daemon whose every answer carries strings that a
// malicious pool member wrote (hostile): node and GPU names, a job's name,
// image and error, an alert's message, a folder's name, a refusal's
// message, and a job's own output.
func hostileAPI() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	now := time.Now().UTC()
	job := app.Job{Job: jobs.Job{ID: "7e82623a8db42109", Name: hostile, Node: peerID, Owner: hostile, Image: hostile,
		State: jobs.Failed, Error: hostile, Created: now}, NodeName: hostile, OwnerName: hostile}
	node := app.Node{ID: peerID, Name: hostile, Online: true, LastSeen: now, Addresses: []string{hostile},
		GPUs: []app.GPU{{Node: peerID, NodeName: hostile, UUID: hostile, Name: hostile}}}
	mux.HandleFunc("GET /api/v1/self", func(w http.ResponseWriter, r *http.Request) { reply(w, app.Self{ID: selfID, Name: "self"}) })
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, r *http.Request) { reply(w, []app.Node{node}) })
	mux.HandleFunc("GET /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) { reply(w, []app.Job{job}) })
	mux.HandleFunc("GET /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) { reply(w, job) })
	mux.HandleFunc("POST /api/v1/jobs/{id}/stop", func(w http.ResponseWriter, r *http.Request) { reply(w, job) })
	mux.HandleFunc("DELETE /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		httperr.Write(w, http.StatusConflict, "running", "remove "+hostile+": it is running")
	})
	mux.HandleFunc("GET /api/v1/jobs/{id}/logs", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(hostile + "\n")) })
	mux.HandleFunc("GET /api/v1/alerts", func(w http.ResponseWriter, r *http.Request) {
		reply(w, []app.Alert{{ID: hostile, Node: peerID, Rule: hostile, Severity: hostile, Message: hostile, FiredAt: now}})
	})
	mux.HandleFunc("GET /api/v1/folders", func(w http.ResponseWriter, r *http.Request) {
		reply(w, []app.Folder{{Node: peerID, NodeName: hostile, Name: hostile, Mode: "ro", MemberNames: []string{hostile}}})
	})
	return mux
}

// TestHostileStringsAreInert: whatever verb prints another machine's
// strings, on stdout or stderr, a terminal shows them and acts on none.
func TestHostileStringsAreInert(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, hostileAPI())
	for _, args := range [][]string{
		{"nodes"}, {"gpus"}, {"ps"}, {"ps", "--all"}, {"alerts"}, {"folders"},
		{"stop", "7e82623a"}, {"rm", "7e82623a"}, {"nodes", "--json"}, {"ps", "--json"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t, Hooks{}, append([]string{"--data", dir}, args...)...)
			if code == ExitUsage {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout+stderr, "evil") {
				t.Errorf("the hostile string is not shown at all; stdout %q, stderr %q", stdout, stderr)
			}
			assertInert(t, "stdout", stdout)
			assertInert(t, "stderr", stderr)
		})
	}
}

// TestJSONStaysEqual: escaping --json output keeps it the same JSON: a
// string decodes to the bytes the other machine wrote.
func TestJSONStaysEqual(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, hostileAPI())
	_, stdout, stderr := run(t, Hooks{}, "--data", dir, "nodes", "--json")
	var got []app.Node
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got) != 1 || got[0].Name != hostile {
		t.Fatalf("nodes --json = %q (%v, stderr %q); want the name %q", stdout, err, stderr, hostile)
	}
}

// TestLogsOutput: a job's output is its own bytes: escaped on a terminal
// unless --raw, passed through to a pipe or a file.
func TestLogsOutput(t *testing.T) {
	tests := []struct {
		name     string
		tty, raw bool
		want     string
	}{
		{"terminal", true, false, Escape(hostile)},
		{"terminal --raw", true, true, hostile},
		{"pipe", false, false, hostile},
		{"pipe --raw", false, true, hostile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			w := logWriter(&b, tt.tty, tt.raw)
			w.Write([]byte(hostile))
			if f, ok := w.(interface{ Flush() }); ok {
				f.Flush()
			}
			if b.String() != tt.want {
				t.Errorf("logs wrote %q; want %q", b.String(), tt.want)
			}
		})
	}
}

// TestWatchFrameInert: watch draws its frame with its own terminal codes
// and the machines' strings escaped, in both paths: the plain redraw, and
// the nodes that bubbletea's View draws.
func TestWatchFrameInert(t *testing.T) {
	now := time.Now()
	nodes := watchNodes(now)
	nodes[0].Name, nodes[0].GPUs[0].Name, nodes[0].GPUs[0].JobName = hostile, hostile, hostile
	r := &fakeReader{nodes: nodes}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one frame
	var out bytes.Buffer
	if err := watchPlain(ctx, &out, r, time.Hour); err != nil {
		t.Fatal(err)
	}
	// The frame's own codes (the redraw, lipgloss's SGR) go out first, then
	// nothing a terminal acts on may be left.
	own := regexp.MustCompile(`\x1b\[H\x1b\[2J|\x1b\[[0-9;]*m`)
	assertInert(t, "watch", own.ReplaceAllString(out.String(), ""))
	if !strings.Contains(out.String(), `evil\x1b]0;owned`) {
		t.Errorf("frame lacks the escaped name:\n%s", out.String())
	}

	r.nodes = watchNodes(now)
	r.nodes[0].Name = hostile
	msg := watchModel{ctx: context.Background(), r: r}.fetch()().(nodesMsg)
	m, _ := watchModel{interval: time.Hour}.Update(msg)
	assertInert(t, "watch (bubbletea)", own.ReplaceAllString(m.View(), ""))
}

// TestLogsPipe: into a pipe, logs gives the job's bytes as they are.
func TestLogsPipe(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, hostileAPI())
	if _, stdout, stderr := run(t, Hooks{}, "--data", dir, "logs", "7e82623a"); stdout != hostile+"\n" {
		t.Errorf("logs into a pipe = %q (stderr %q); want the job's bytes %q", stdout, stderr, hostile+"\n")
	}
}
