package jobs

import (
	"context"
	"testing"

	"github.com/labpool/labpool/node/gpu"
)

// TestStatsRemoteGPUs: where the executor schedules, stats of a running
// job shows the GPUs Config.RemoteGPUs reports for it (its compute nodes'),
// after the executor's own figures; a manager whose executor runs the jobs
// here never asks the hook.
func TestStatsRemoteGPUs(t *testing.T) {
	proc := gpu.Process{PID: 77, MemBytes: 3 << 30}
	remote := []GPUStats{{UUID: "GPU-n1-0", Index: 0, Host: "node1", UtilPercent: 80, MemUsedBytes: 3 << 30, Processes: []gpu.Process{proc}}}
	var asked []string
	hook := func(_ context.Context, j Job) []GPUStats {
		asked = append(asked, j.ID)
		return remote
	}

	t.Run("a cluster job", func(t *testing.T) {
		asked = nil
		m, rt, _ := clusterManager(t)
		m.cfg.RemoteGPUs = hook // before any call reads it
		ctx := context.Background()
		j, err := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"train"}, GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		rt.set(j.Container, TaskRunning, 0, "node1")
		waitState(t, m, j.ID, Running)
		st, err := m.Stats(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(asked) != 1 || asked[0] != j.ID {
			t.Errorf("RemoteGPUs asked about %v, want %s once", asked, j.ID)
		}
		if st.MemUsedBytes != 1<<20 || len(st.GPUs) != 1 || st.GPUs[0].UUID != "GPU-n1-0" || st.GPUs[0].Host != "node1" ||
			st.GPUs[0].MemUsedBytes != 3<<30 || len(st.GPUs[0].Processes) != 1 {
			t.Errorf("stats %+v, want the executor's memory and the remote GPU", st)
		}
	})
	t.Run("a job of this machine", func(t *testing.T) {
		asked = nil
		rt := newFakeRuntime()
		m := newTestManager(t, rt, 1, &memStore{})
		m.cfg.RemoteGPUs = hook
		ctx := context.Background()
		j, err := m.Submit(ctx, member("o"), Spec{Image: "img", GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, m, j.ID, Running)
		st, err := m.Stats(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(asked) != 0 || len(st.GPUs) != 1 || st.GPUs[0].Host != "" {
			t.Errorf("stats %+v (RemoteGPUs asked about %v), want its own GPU only", st, asked)
		}
	})
}
