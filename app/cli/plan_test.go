package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
)

// busyPool is a daemon whose pool has "big" (2 GPUs, one busy), "small"
// (2 GPUs, one busy) and a laptop without Docker: 1 GPU fits on big, 2
// fit nowhere now but on big with --queue, 3 or more nowhere ever.
func busyPool(t *testing.T) string {
	dir := t.TempDir()
	nodes := []app.NodePlan{
		{Node: "BIG", NodeName: "big", Reason: "1 of 2 GPUs free that match (busy: GPU 0: job train of mike)"},
		{Node: "SMALL", NodeName: "small", Reason: "1 of 2 GPUs free that match (busy: GPU 1: a process outside labpool)"},
		{Node: "LAPTOP", NodeName: "ana-laptop", Reason: "cannot run containers: Cannot connect to the Docker daemon"},
	}
	planOf := func(req app.LaunchRequest) app.Plan {
		p := app.Plan{Nodes: nodes}
		fits := req.Spec.GPUs <= 1 || req.Spec.GPUs == 2 && req.Spec.Queue
		switch {
		case req.Node != "":
			p.NodePlan = nodes[0]
			p.Fits = fits
		case fits:
			p.NodePlan, p.Fits, p.Reason = nodes[0], true, "big has 1 free GPU and is the least loaded that fits"
		default:
			p.Reason = "no machine fits:\n  big: " + nodes[0].Reason + "\n  small: " + nodes[1].Reason +
				"\n  cannot run containers (labpool nodes says why): ana-laptop"
		}
		return p
	}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	read := func(r *http.Request) app.LaunchRequest {
		var req app.LaunchRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode the launch request: %v", err)
		}
		return req
	}
	mux.HandleFunc("GET /api/v1/self", func(w http.ResponseWriter, r *http.Request) { reply(w, app.Self{ID: selfID, Name: "self"}) })
	mux.HandleFunc("POST /api/v1/jobs/plan", func(w http.ResponseWriter, r *http.Request) { reply(w, planOf(read(r))) })
	mux.HandleFunc("POST /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		if p := planOf(read(r)); !p.Fits {
			web.WriteError(w, &app.APIError{Status: http.StatusConflict, Code: "no_fit", Message: p.Reason})
			return
		}
		t.Errorf("a launch that fits: the test launches none")
	})
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, mux)
	return dir
}

// TestRunNoFit: a launch or a dry-run that fits nowhere exits 1, says why
// a line per machine, and ends with what to do: --queue where the job
// would wait with it, --dry-run for a launch; a dry-run for a machine
// named shows that machine alone.
func TestRunNoFit(t *testing.T) {
	dir := busyPool(t)
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string // each in order
		absent         []string // in neither
		lastLine       string   // stderr's last line holds it
	}{
		{name: "launch, busy", args: []string{"run", "--gpus", "2", "img"}, code: ExitFailure,
			stderr:   []string{"labpool: no machine fits:\n  big: 1 of 2", "\n  small: ", "\n  cannot run containers (labpool nodes says why): ana-laptop\n"},
			lastLine: "add --queue to wait for busy GPUs: it would wait on big"},
		{name: "launch, never", args: []string{"run", "--gpus", "3", "img"}, code: ExitFailure,
			stderr:   []string{"labpool: no machine fits:"},
			lastLine: "--queue would not help: no machine has what it asks, even once its GPUs are free; labpool run --dry-run shows each machine"},
		{name: "launch queued, never", args: []string{"run", "--queue", "--gpus", "3", "img"}, code: ExitFailure,
			lastLine: "no machine has what it asks, even once its GPUs are free; labpool run --dry-run shows each machine", absent: []string{"add --queue"}},
		{name: "dry-run, busy", args: []string{"run", "--dry-run", "--gpus", "2", "img"}, code: ExitFailure,
			stdout:   []string{"no machine fits:\n  big: ", "\n  cannot run containers"},
			stderr:   []string{"labpool: it does not fit now (the plan above says why)\n"},
			lastLine: "add --queue to wait for busy GPUs: it would wait on big", absent: []string{"MACHINE", "--dry-run shows"}},
		{name: "dry-run fits", args: []string{"run", "--dry-run", "--gpus", "1", "img"}, code: ExitOK,
			stdout: []string{"would run on big: ", "MACHINE", "\nsmall ", "\nana-laptop "}},
		{name: "dry-run named, busy", args: []string{"run", "--dry-run", "--node", "big", "--gpus", "2", "img"}, code: ExitFailure,
			stdout:   []string{"does not fit on big: 1 of 2 GPUs free"},
			lastLine: "add --queue to wait for busy GPUs: it would wait on big", absent: []string{"small", "ana-laptop", "MACHINE"}},
		{name: "dry-run named fits", args: []string{"run", "--dry-run", "--node", "big", "--gpus", "1", "img"}, code: ExitOK,
			stdout: []string{"would run on big"}, absent: []string{"small", "ana-laptop", "MACHINE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, Hooks{}, append([]string{"--data", dir}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			inOrder(t, "stdout", stdout, tc.stdout)
			inOrder(t, "stderr", stderr, tc.stderr)
			for _, a := range tc.absent {
				if strings.Contains(stdout+stderr, a) {
					t.Errorf("output holds %q:\n%s\n%s", a, stdout, stderr)
				}
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, tc.lastLine) {
				t.Errorf("stderr's last line %q; want %q", last, tc.lastLine)
			}
			for _, l := range strings.Split(stdout+stderr, "\n") {
				if len(l) > 170 {
					t.Errorf("a line of %d bytes: %q", len(l), l)
				}
			}
		})
	}
}

// inOrder fails t unless s holds each of want, in that order.
func inOrder(t *testing.T, what, s string, want []string) {
	t.Helper()
	rest := s
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("%s lacks %q after what came before:\n%s", what, w, s)
			return
		}
		rest = rest[i+len(w):]
	}
}
