package cli

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// TestHelpSaysWhatHappens: the help of `open` names the address its
// tunnels listen on (never 127.0.0.1, the web UI's), and `run --port`
// does not promise a port published on loopback: it is published nowhere.
func TestHelpSaysWhatHappens(t *testing.T) {
	_, out, _ := run(t, Hooks{}, "open", "--help")
	if !strings.Contains(out, "127.0.0.2") || strings.Contains(out, "to 127.0.0.1 here") || !app.IsTunnelHost("127.0.0.2") {
		t.Errorf("open --help:\n%s\nwant the tunnels' address, 127.0.0.2", out)
	}
	_, out, _ = run(t, Hooks{}, "run", "--help")
	if strings.Contains(out, "publish on the machine's loopback") || !strings.Contains(out, "published nowhere") {
		t.Errorf("run --help:\n%s\nwant --port said to publish nothing", out)
	}
}

// TestFilesCount: one file is "1 file", not "1 files".
func TestFilesCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 files", 1: "1 file", 2: "2 files"} {
		if got := files(n); got != want {
			t.Errorf("files(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestStoppedLine: stopping a queued Slurm job says "cancelled", as ps
// does, not the bare state "exited".
func TestStoppedLine(t *testing.T) {
	j := app.Job{Job: jobs.Job{Name: "bert", State: jobs.Exited, Outcome: "cancelled"}, NodeName: "hpc"}
	if got, want := stoppedLine(j), "bert on hpc: cancelled"; got != want {
		t.Errorf("stop prints %q, want %q", got, want)
	}
}
