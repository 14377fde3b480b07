//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
)

// h100 is what the mock library's h100.yaml profile states of each GPU.
var h100 = struct {
	name                string
	memTotal            uint64
	powerLimitW, powerW float64
	tempC               float64
	smMHz, memMHz       int
}{"NVIDIA H100 80GB HBM3", 85899345920, 700, 95, 34, 345, 1593}

func h100UUID(i int) string { return fmt.Sprintf("GPU-01000100-0000-0000-0000-%012d", i) }

// TestNVMLReadings runs an agent on the mock NVML library with the H100
// profile and checks that every reading labpool reports is the profile's.
func TestNVMLReadings(t *testing.T) {
	l := newLAN(t, "gpu1")
	gpu1 := l.host("gpu1")
	m := gpu1.useMockNVML("h100.yaml")
	gpu1.agent()
	gpu1.waitDaemon()
	var gpus []app.GPU
	waitFor(t, 20*time.Second, "8 GPUs listed", func() error {
		var err error
		gpus, err = gpu1.client().GPUs(context.Background())
		if err == nil && len(gpus) != 8 {
			err = fmt.Errorf("%d GPUs", len(gpus))
		}
		return err
	})
	for i, g := range gpus {
		if g.Index != i || g.UUID != h100UUID(i) || g.Name != h100.name || g.MemTotalBytes != h100.memTotal ||
			g.PowerLimitW != h100.powerLimitW || g.PowerW != h100.powerW || g.TempC != h100.tempC ||
			g.SMClockMHz != h100.smMHz || g.MemClockMHz != h100.memMHz || g.UtilPercent != 0 || g.FanPercent != -1 ||
			g.EnergyMJ < 600000 || g.EnergyMJ > 600000+95000*60 || g.MemReservedBytes != 1<<30 || g.Health != "ok" || len(g.Throttle) != 0 || g.XIDErrors != 0 || g.ECCUncorrected != 0 ||
			g.RetiredPending || g.Job != "" || len(g.ProcessList) != 0 {
			t.Errorf("gpu %d reads %+v; the profile states %+v", i, g, h100)
		}
	}

	// What the overrides change at run time reaches the pool view.
	m.setOverrides(deviceOverrides(map[int]string{1: `{utilization: {gpu: 97, memory: 60}, thermal: {temperature_gpu_c: 88},
      power: {current_draw_mw: 612000}, memory: {used_bytes: 21474836480, free_bytes: 64424509440},
      clocks: {sm_current: 1980}, clocks_throttle_reasons: {hw_thermal_slowdown: true, gpu_idle: false}}`}))
	var g app.GPU
	waitFor(t, 20*time.Second, "gpu 1 with the overrides", func() error {
		gpus, err := gpu1.client().GPUs(context.Background())
		if err != nil {
			return err
		}
		if g = gpus[1]; g.UtilPercent != 97 {
			return fmt.Errorf("gpu 1: %+v", g)
		}
		return nil
	})
	if g.MemUtilPercent != 60 || g.TempC != 88 || g.PowerW != 612 || g.MemUsedBytes != 21474836480 || g.SMClockMHz != 1980 ||
		g.Health != "warning" || g.HealthReason != "throttled: hw_thermal_slowdown" || fmt.Sprint(g.Throttle) != "[hw_thermal_slowdown]" {
		t.Errorf("gpu 1 after the overrides: %+v", g)
	}
}

// gpuList reads h's view of the pool's GPUs on node, by index.
func gpuList(h *host, node string) ([]app.GPU, error) {
	all, err := h.client().GPUs(context.Background())
	if err != nil {
		return nil, err
	}
	var out []app.GPU
	for _, g := range all {
		if g.NodeName == node {
			out = append(out, g)
		}
	}
	return out, nil
}

// waitGPU waits until h sees GPU i of node in the state cond accepts.
func waitGPU(t *testing.T, h *host, node string, i int, what string, cond func(app.GPU) error) app.GPU {
	t.Helper()
	var g app.GPU
	waitFor(t, 20*time.Second, fmt.Sprintf("%s sees gpu %d of %s %s", h.name, i, node, what), func() error {
		gs, err := gpuList(h, node)
		if err != nil {
			return err
		}
		if i >= len(gs) {
			return fmt.Errorf("%d GPUs", len(gs))
		}
		g = gs[i]
		return cond(g)
	})
	return g
}

// TestNVMLJobs runs a job on an agent whose GPUs are NVIDIA's mock library
// (H100 profile) and a real dockerd: the job's container PID written into
// the mock's process list shows as the job's process with its memory; a
// PID outside labpool makes its GPU busy; `failure: {mode:
// ecc_uncorrectable, xid: {code: 79}}` quarantines a GPU (a launch asking
// for it is refused naming the fault; the quarantine survives a restart;
// a member may not clear it, the machine's user may); `mode: lost` leaves
// the other GPUs reporting.
func TestNVMLJobs(t *testing.T) {
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	sock := gpu1.docker()
	m := gpu1.useMockNVML("h100.yaml")
	gpu1.agent()
	laptop.agent()
	gpu1.waitDaemon()
	laptop.waitDaemon()
	joinAll(t, gpu1, laptop)
	waitFor(t, 20*time.Second, "gpu1 live on the laptop", func() error { return liveNodes(laptop, "gpu1") })
	self, err := gpu1.client().Self(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const img = "labpool-test/busybox:1"
	run := func(args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code := gpu1.cli(append([]string{"run"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1], errOut, code
	}

	id, errOut, code := run("--gpu-ids", "0", "--name", "train", img, "sleep", "1000")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	var job app.Job
	waitFor(t, 20*time.Second, "the job running", func() error {
		job, err = gpu1.client().Job(context.Background(), id)
		if err == nil && (job.State != "running" || job.Container == "") {
			err = fmt.Errorf("state %s", job.State)
		}
		return err
	})
	out, err := exec.Command("docker", "-H", sock, "inspect", "-f", "{{.State.Pid}}", job.Container).Output()
	if err != nil {
		t.Fatalf("docker inspect: %v", err)
	}
	pid := strings.TrimSpace(string(out))
	outside := os.Getpid() // this test: no container
	procs := fmt.Sprintf(`devices:
  "0":
    processes:
      - {pid: %s, type: "C", name: "python", used_memory_mib: 20480}
  "3":
    processes:
      - {pid: %d, type: "C", name: "miner", used_memory_mib: 1024}
`, pid, outside)
	m.setOverrides(procs)

	t.Run("processes mapped to jobs", func(t *testing.T) {
		g := waitGPU(t, laptop, "gpu1", 0, "with the job's process", func(g app.GPU) error {
			if len(g.ProcessList) != 1 || fmt.Sprint(g.ProcessList[0].PID) != pid || g.ProcessList[0].Job != id {
				return fmt.Errorf("processes %+v", g.ProcessList)
			}
			return nil
		})
		if p := g.ProcessList[0]; p.MemBytes != 20480<<20 || p.Owner != self.ID || g.Job != id {
			t.Errorf("gpu 0: job %q, process %+v; want job %s, 20 GiB, owner %s", g.Job, p, id, self.ID)
		}
		g = waitGPU(t, laptop, "gpu1", 3, "with a process outside labpool", func(g app.GPU) error {
			if len(g.ProcessList) != 1 || g.ProcessList[0].PID != uint32(outside) {
				return fmt.Errorf("processes %+v", g.ProcessList)
			}
			return nil
		})
		if p := g.ProcessList[0]; p.Job != "" || p.Owner != "" || p.MemBytes != 1<<30 || g.Job != "" {
			t.Errorf("gpu 3: %+v; want a process outside labpool", g)
		}
		text, _, _ := laptop.cli("gpus")
		for _, want := range []string{"pid " + pid, "job " + job.Name + " (gpu1)", fmt.Sprintf("pid %d", outside), "outside labpool"} {
			if !strings.Contains(text, want) {
				t.Errorf("labpool gpus does not say %q:\n%s", want, text)
			}
		}
		out, errOut, code := gpu1.cli("stats", id) // its owner
		if code != 0 || !strings.Contains(out, "pid "+pid) || !strings.Contains(out, "20.0 GiB") {
			t.Errorf("labpool stats %s: exit %d:\n%s%s", id, code, out, errOut)
		}
		_, errOut, code = run("--gpu-ids", "3", img, "true")
		if code == 0 || !strings.Contains(errOut, "GPU 3: a process outside labpool") {
			t.Errorf("a launch on gpu 3 (a process outside labpool): exit %d: %s", code, errOut)
		}
	})

	t.Run("ECC and XID 79 quarantine", func(t *testing.T) {
		m.setOverrides(procs + `  "2":
    failure: {mode: ecc_uncorrectable, xid: {code: 79}}
`)
		g := waitGPU(t, laptop, "gpu1", 2, "quarantined", func(g app.GPU) error {
			if g.Health != "quarantined" || !strings.Contains(g.HealthReason, xid79) {
				return fmt.Errorf("health %q (%q)", g.Health, g.HealthReason)
			}
			return nil
		})
		t.Logf("gpu 2: %s: %s (xid_errors %d, ecc_uncorrected %d)", g.Health, g.HealthReason, g.XIDErrors, g.ECCUncorrected)
		if g.XIDErrors != 1 || g.ECCUncorrected == 0 {
			t.Errorf("gpu 2: xid_errors %d, ecc_uncorrected %d", g.XIDErrors, g.ECCUncorrected)
		}
		_, errOut, code := run("--gpu-ids", "2", img, "true")
		if code == 0 || !strings.Contains(errOut, "gpu 2 quarantined: "+xid79) {
			t.Errorf("a launch asking for gpu 2: exit %d: %s; want refused naming the fault", code, errOut)
		}
		text, _, _ := laptop.cli("gpus")
		if !strings.Contains(text, "quarantined: "+xid79) {
			t.Errorf("labpool gpus does not show the quarantine:\n%s", text)
		}
		// A count skips it: 8 GPUs, 0 held, 2 quarantined, 3 busy outside.
		id2, errOut, code := run("--gpus", "5", img, "sleep", "1000")
		if code != 0 {
			t.Fatalf("a launch of 5 GPUs: exit %d: %s", code, errOut)
		}
		j2, err := gpu1.client().Job(context.Background(), id2)
		if err != nil || fmt.Sprint(j2.GPUIndexes) != "[1 4 5 6 7]" {
			t.Errorf("a 5-GPU job got %v (%v); want [1 4 5 6 7]", j2.GPUIndexes, err)
		}
		gpu1.cli("stop", id2)

		// The fault ends in NVML (the library is reloaded below), the
		// quarantine stays: it is kept across a restart.
		m.setOverrides(procs)
		gpu1.kill()
		gpu1.agent()
		gpu1.waitDaemon()
		waitGPU(t, gpu1, "gpu1", 2, "quarantined after a restart", func(g app.GPU) error {
			if g.Health != "quarantined" || !strings.Contains(g.HealthReason, xid79) {
				return fmt.Errorf("health %q (%q)", g.Health, g.HealthReason)
			}
			return nil
		})
		_, errOut, code = run("--gpu-ids", "2", img, "true")
		if code == 0 || !strings.Contains(errOut, "gpu 2 quarantined: "+xid79) {
			t.Errorf("a launch asking for gpu 2 after a restart: exit %d: %s", code, errOut)
		}

		waitFor(t, 20*time.Second, "gpu1 live on the laptop again", func() error { return liveNodes(laptop, "gpu1") })
		const rule = "only the pool's owners and this machine's user clear a quarantine"
		waitFor(t, 20*time.Second, "a member's clear refused by the rule", func() error {
			// (retried: the laptop's connection to gpu1 may still be the
			// one from before the restart)
			_, errOut, code := laptop.cli("gpu", "clear", "gpu1:2")
			if code == 0 || !strings.Contains(errOut, rule) {
				return fmt.Errorf("exit %d: %s", code, errOut)
			}
			return nil
		})
		out, errOut, code := gpu1.cli("gpu", "clear", "gpu1:2")
		if code != 0 || !strings.Contains(out, "was quarantined: "+xid79) {
			t.Fatalf("the machine's user clears the quarantine: exit %d: %s%s", code, out, errOut)
		}
		waitGPU(t, gpu1, "gpu1", 2, "ok after the clear", func(g app.GPU) error {
			if g.Health != "ok" {
				return fmt.Errorf("health %q (%q)", g.Health, g.HealthReason)
			}
			return nil
		})
		id3, errOut, code := run("--gpu-ids", "2", img, "true")
		if code != 0 {
			t.Errorf("a launch asking for gpu 2 after the clear: exit %d: %s", code, errOut)
		}
		_ = id3
	})

	t.Run("lost GPU", func(t *testing.T) {
		m.setOverrides(procs + `  "5":
    failure: {mode: lost}
`)
		g := waitGPU(t, gpu1, "gpu1", 5, "lost", func(g app.GPU) error {
			if g.Health != "lost" {
				return fmt.Errorf("health %q (%q)", g.Health, g.HealthReason)
			}
			return nil
		})
		t.Logf("gpu 5: %s: %s", g.Health, g.HealthReason)
		// The others keep reporting, sample after sample.
		before, err := nodeByName(gpu1, "gpu1")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "new samples beside the lost GPU", func() error {
			n, err := nodeByName(gpu1, "gpu1")
			if err != nil {
				return err
			}
			if !n.LastSeen.After(before.LastSeen.Add(2 * time.Second)) {
				return fmt.Errorf("last seen %v", n.LastSeen)
			}
			for _, o := range n.GPUs {
				if o.Index != 5 && (o.TempC != h100.tempC || o.Health == "lost" || o.Name != h100.name) {
					return fmt.Errorf("gpu %d beside the lost one: %+v", o.Index, o)
				}
			}
			return nil
		})
		_, errOut, code := run("--gpu-ids", "5", img, "true")
		if code == 0 || !strings.Contains(errOut, "gpu 5 lost") {
			t.Errorf("a launch asking for the lost gpu 5: exit %d: %s", code, errOut)
		}
	})
}

const xid79 = "XID 79 (GPU has fallen off the bus)"
