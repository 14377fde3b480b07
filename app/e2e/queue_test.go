//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPoolQueue: a job queued with no --node while both GPU machines are
// full waits on one of them, says where and why, and starts on the other
// as soon as that one frees its GPUs, with the laptop that queued it gone
// (asleep): the queue lives on the agents. It runs once, there.
func TestPoolQueue(t *testing.T) {
	l := newLAN(t, "gpu1", "gpu2", "laptop")
	gpu1, gpu2, laptop := l.host("gpu1"), l.host("gpu2"), l.host("laptop")
	gpu1.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	gpu2.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	socks := map[string]string{"gpu1": gpu1.docker(), "gpu2": gpu2.docker()}
	hosts := map[string]*host{"gpu1": gpu1, "gpu2": gpu2}
	gpu1.agent()
	gpu2.agent()
	laptop.agent()
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, gpu2, laptop)
	waitFor(t, 20*time.Second, "both agents live on the laptop", func() error { return liveNodes(laptop, "gpu1", "gpu2") })
	const img = "labpool-test/busybox:1"
	var said string // what the last run printed
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := laptop.cli(append([]string{"run"}, args...)...)
		if code != 0 {
			t.Fatalf("labpool run %v: exit %d: %s%s", args, code, out, errOut)
		}
		said = out
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	state := func(h *host, id string) (string, string, error) {
		j, err := h.client().Job(context.Background(), id)
		if err == nil && j.Error != "" && j.State == "queued" {
			err = errors.New(j.Error) // where it waits, and why
		}
		return string(j.State), j.NodeName, err
	}
	full := map[string]string{}
	for _, n := range []string{"gpu1", "gpu2"} {
		full[n] = run("--node", n, "--gpus", "2", img, "sleep", "600")
	}
	for n, id := range full {
		waitFor(t, 30*time.Second, "the job filling "+n, func() error {
			if st, _, err := state(laptop, id); err != nil || st != "running" {
				return fmt.Errorf("%s %v", st, err)
			}
			return nil
		})
	}

	q := run("--gpus", "2", "--queue", img, "sleep", "600")
	// It says why it waits once: "NAME on gpu1: queued", "  ↳ why", its ID.
	if lines := strings.Split(strings.TrimSpace(said), "\n"); len(lines) != 3 || !strings.HasSuffix(lines[0], ": queued") ||
		!strings.HasPrefix(lines[1], "  ↳ ") || strings.Contains(said, "placed:") {
		t.Errorf("run --queue said:\n%s\nwant the state, why it waits once, and the ID", said)
	}
	_, home, err := state(laptop, q)
	if home == "" {
		t.Fatalf("the queued job's home: %v", err)
	}
	other := map[string]string{"gpu1": "gpu2", "gpu2": "gpu1"}[home]
	waitFor(t, 10*time.Second, "ps saying where the job waits and why", func() error {
		out, _, _ := laptop.cli("ps", "--wide") // the reason whole
		if !strings.Contains(out, "↳ waits on "+home+" for 2 GPUs") || !strings.Contains(out, "no other machine fits: "+other) {
			return fmt.Errorf("ps:\n%s", out)
		}
		return nil
	})

	laptop.kill() // the laptop sleeps
	if _, errOut, code := hosts[other].cli("stop", full[other]); code != 0 {
		t.Fatalf("stop on %s: %s", other, errOut)
	}
	start := time.Now()
	waitFor(t, 20*time.Second, "the queued job running on "+other, func() error {
		if st, node, err := state(hosts[home], q); err != nil || st != "running" || node != other {
			return fmt.Errorf("%s on %s, %v", st, node, err)
		}
		return nil
	})
	t.Logf("the queued job started on %s %v after its GPUs were freed there (ps via %s)", other, time.Since(start).Round(10*time.Millisecond), home)
	for n, sock := range socks {
		out, err := exec.Command("docker", "-H", sock, "ps", "-aq", "--filter", "label=labpool.job="+q).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if n == other {
			want = 1
		}
		if got := len(strings.Fields(string(out))); got != want {
			t.Errorf("%s has %d containers of the queued job, want %d", n, got, want)
		}
	}
	out, _, _ := hosts[home].cli("ps", "--all")
	if !strings.Contains(out, "moved") {
		t.Errorf("%s's ps --all does not show its record as moved:\n%s", home, out)
	}
}
