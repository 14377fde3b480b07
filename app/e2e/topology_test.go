//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// TestNVMLTopology runs an agent on the mock NVML library with the H100
// profile: its topology (eight GPUs all NVLinked through NVSwitches, 18
// links each, four per NUMA node: PIX within, SYS across) and MIG mode
// (supported, off) reach the pool view, `labpool gpus` and its --json; the
// plan of a 4-GPU job avoids a GPU throttling at 91 °C and says so, and the
// machine grants what the plan picked.
// (The rule before it took the lowest indexes: 0-3, GPU 2 with them.)
func TestNVMLTopology(t *testing.T) {
	l := newLAN(t, "gpu1")
	gpu1 := l.host("gpu1")
	sock := gpu1.docker()
	m := gpu1.useMockNVML("h100.yaml")
	gpu1.agent()
	gpu1.waitDaemon()
	var gpus []app.GPU
	waitFor(t, 20*time.Second, "8 GPUs with their links", func() error {
		var err error
		gpus, err = gpu1.client().GPUs(context.Background())
		if err == nil && (len(gpus) != 8 || len(gpus[7].Links) != 7) {
			err = fmt.Errorf("%d GPUs, %+v", len(gpus), gpus)
		}
		return err
	})
	for i, g := range gpus {
		for _, lk := range g.Links {
			pcie := "SYS"
			if lk.Peer/4 == i/4 {
				pcie = "PIX"
			}
			if lk.NVLinks != 18 || lk.PCIe != pcie || lk.PeerUUID != h100UUID(lk.Peer) {
				t.Errorf("gpu %d -> %d: %+v; the profile states 18 NVLinks over %s", i, lk.Peer, lk, pcie)
			}
		}
		if g.MIG == nil || !g.MIG.Supported || g.MIG.Enabled || len(g.MIG.Instances) != 0 {
			t.Errorf("gpu %d MIG %+v; the profile states supported, off", i, g.MIG)
		}
		if g.PCIBusID == "" {
			t.Errorf("gpu %d has no PCI bus ID", i)
		}
	}

	out, errOut, code := gpu1.cli("gpus")
	if code != 0 || !strings.Contains(out, "GPU0  X     NV18  NV18") || !strings.Contains(out, "MIG supported, off: GPUs 0, 1, 2, 3, 4, 5, 6, 7") {
		t.Errorf("labpool gpus (exit %d): %s%s; want the NV18 matrix and MIG off", code, out, errOut)
	}
	out, errOut, code = gpu1.cli("gpus", "--json")
	var js []app.GPU
	if code != 0 || json.Unmarshal([]byte(out), &js) != nil || len(js) != 8 || len(js[0].Links) != 7 || js[0].Links[0].NVLinks != 18 || js[0].MIG == nil {
		t.Errorf("labpool gpus --json (exit %d): %s%s; want links and mig", code, out, errOut)
	}

	m.setOverrides(deviceOverrides(map[int]string{2: `{thermal: {temperature_gpu_c: 91},
      clocks_throttle_reasons: {hw_thermal_slowdown: true, gpu_idle: false}}`}))
	waitGPU(t, gpu1, "gpu1", 2, "at 91 °C", func(g app.GPU) error {
		if g.TempC != 91 || g.Health != "warning" {
			return fmt.Errorf("%v °C, %s", g.TempC, g.Health)
		}
		return nil
	})
	p, err := gpu1.client().Plan(context.Background(), app.LaunchRequest{Spec: jobs.Spec{GPUs: 4}})
	if err != nil {
		t.Fatal(err)
	}
	// 4-7: all NVLinked as 0,1,3,4 are, but one NUMA node (PIX) where 0,1,3,4 span two.
	if !slices.Equal(p.Picked, []int{4, 5, 6, 7}) || !strings.Contains(p.Reason, "avoided GPU 2 (throttled: hw_thermal_slowdown at 91 °C)") ||
		!strings.Contains(p.Reason, "every pair NVLinked (at least 18 links)") {
		t.Errorf("plan of 4 GPUs picked %v: %q; want 4,5,6,7, GPU 2 avoided, NVLinked", p.Picked, p.Reason)
	}

	out, errOut, code = gpu1.cli("run", "--gpus", "4", "--name", "four", "labpool-test/busybox:1", "sleep", "1000")
	if code != 0 {
		t.Fatalf("run --gpus 4: exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "placed: gpu1 has 8 free GPUs") || !strings.Contains(out, "avoided GPU 2 (throttled: hw_thermal_slowdown at 91 °C)") {
		t.Errorf("run --gpus 4 says %q; want where it was placed and why", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var job app.Job
	waitFor(t, 20*time.Second, "the job running", func() error {
		job, err = gpu1.client().Job(context.Background(), lines[len(lines)-1])
		if err == nil && (job.State != "running" || job.Container == "") {
			err = fmt.Errorf("state %s", job.State)
		}
		return err
	})
	if !slices.Equal(job.GPUIndexes, p.Picked) {
		t.Errorf("the machine granted GPUs %v; the plan picked %v", job.GPUIndexes, p.Picked)
	}
	env, err := exec.Command("docker", "-H", sock, "inspect", "-f", "{{json .Config.Env}}", job.Container).Output()
	if err != nil {
		t.Fatalf("docker inspect: %v", err)
	}
	want := "NVIDIA_VISIBLE_DEVICES=" + strings.Join([]string{h100UUID(4), h100UUID(5), h100UUID(6), h100UUID(7)}, ",")
	if !strings.Contains(string(env), want) {
		t.Errorf("container env %s; want %s", env, want)
	}
}
