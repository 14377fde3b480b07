package jobs

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/gpu"
)

// TestValidateShare: a GPU share is a fraction of one GPU, alone; its
// memory cap goes with it; a MIG profile looks like one. Each refusal
// names its rule.
func TestValidateShare(t *testing.T) {
	img := func(s Spec) Spec { s.Image = "i"; return s }
	tests := []struct {
		name string
		spec Spec
		rule string // "": accepted
	}{
		{"quarter", Spec{GPUShare: 0.25}, ""},
		{"quarter with memory", Spec{GPUShare: 0.25, GPUMemBytes: 20 << 30}, ""},
		{"share with gpus 1", Spec{GPUShare: 0.5, GPUs: 1}, ""},
		{"over one", Spec{GPUShare: 1.5}, "gpu-share"},
		{"exactly one", Spec{GPUShare: 1}, "gpu-share"},
		{"negative", Spec{GPUShare: -0.25}, "gpu-share"},
		{"NaN", Spec{GPUShare: math.NaN()}, "gpu-share"},
		{"infinite", Spec{GPUShare: math.Inf(1)}, "gpu-share"},
		{"too fine", Spec{GPUShare: 0.001}, "gpu-share"},
		{"share of two GPUs", Spec{GPUShare: 0.5, GPUs: 2}, "gpu-share"},
		{"share with indexes", Spec{GPUShare: 0.5, GPUIDs: []int{0}}, "gpu-share"},
		{"share with MIG", Spec{GPUShare: 0.5, MIGIDs: []string{"MIG-a"}}, "gpu-share"},
		{"share with MIG profile", Spec{GPUShare: 0.5, MIGProfile: "3g.40gb"}, "gpu-share"},
		{"memory without share", Spec{GPUMemBytes: 8 << 30, GPUs: 1}, "gpu-mem"},
		{"memory too small", Spec{GPUShare: 0.5, GPUMemBytes: 1 << 20}, "gpu-mem"},
		{"memory absurd", Spec{GPUShare: 0.5, GPUMemBytes: MaxBytes + 1}, "gpu-mem"},
		{"profile", Spec{MIGProfile: "3g.40gb"}, ""},
		{"profile count", Spec{MIGProfile: "1g.10gb", GPUs: 2}, ""},
		{"profile +me", Spec{MIGProfile: "1g.10gb+me"}, ""},
		{"compute instance profile", Spec{MIGProfile: "1c.3g.40gb"}, ""},
		{"profile garbage", Spec{MIGProfile: "3g.40gb; rm -rf"}, "mig-profile"},
		{"profile no memory", Spec{MIGProfile: "3g"}, "mig-profile"},
		{"profile with indexes", Spec{MIGProfile: "3g.40gb", GPUIDs: []int{0}}, "mig-profile"},
		{"profile with MIG UUIDs", Spec{MIGProfile: "3g.40gb", MIGIDs: []string{"MIG-a"}}, "mig-profile"},
		{"profile too long", Spec{MIGProfile: strings.Repeat("1", 40) + "g.10gb"}, "mig-profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(img(tt.spec), dockerCaps, nil, 2)
			var refused *RefusedError
			switch {
			case tt.rule == "" && err != nil:
				t.Fatalf("Validate = %v; want accepted", err)
			case tt.rule != "" && (!errors.As(err, &refused) || refused.Rule != tt.rule):
				t.Fatalf("Validate = %v; want refused by rule %q", err, tt.rule)
			}
		})
	}
}

// TestValidateShareScheduled: a cluster places GPUs itself; a share or a
// MIG profile names this machine's GPUs.
func TestValidateShareScheduled(t *testing.T) {
	for _, s := range []Spec{{Image: "i", GPUShare: 0.5}, {Image: "i", MIGProfile: "3g.40gb"}, {Image: "i", GPUs: 1, GPUMemBytes: 1 << 30}} {
		var refused *RefusedError
		if err := Validate(s, Capabilities{Name: "slurm", Schedules: true, Images: []string{"pyxis"}}, nil, 0); !errors.As(err, &refused) {
			t.Errorf("Validate(%+v) on a cluster = %v; want refused", s, err)
		}
	}
}

// TestValidateShareMem: a share's memory cap above what the largest GPU
// here has is refused, naming that GPU's memory.
func TestValidateShareMem(t *testing.T) {
	gpus := []gpu.Stats{{Index: 0, Name: "NVIDIA A100 40GB", MemTotalBytes: 40 << 30}, {Index: 1, Name: "NVIDIA H100", MemTotalBytes: 80 << 30}}
	tests := []struct {
		name string
		spec Spec
		gpus []gpu.Stats
		rule string
		want string // "": accepted; else a part of the error
	}{
		{"fits the largest", Spec{GPUShare: 0.5, GPUMemBytes: 60 << 30}, gpus, "", ""},
		{"exactly the largest", Spec{GPUShare: 0.5, GPUMemBytes: 80 << 30}, gpus, "", ""},
		{"over the largest", Spec{GPUShare: 0.5, GPUMemBytes: 96 << 30}, gpus, "gpu-mem", "(GPU 1, NVIDIA H100) has 80 GiB"},
		{"no GPUs", Spec{GPUShare: 0.5}, nil, "gpu-share", "no GPU"},
		{"no cap", Spec{GPUShare: 0.5}, gpus, "", ""},
		{"not a share", Spec{GPUs: 1}, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateShareMem(tt.spec, tt.gpus)
			var refused *RefusedError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("ValidateShareMem = %v; want accepted", err)
			case tt.want != "" && (!errors.As(err, &refused) || refused.Rule != tt.rule || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("ValidateShareMem = %v; want refused by %s, naming %q", err, tt.rule, tt.want)
			}
		})
	}
}

// TestShareNote: a time-sliced share says plainly that it is uncapped; an
// MPS share says what is capped.
func TestShareNote(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		want []string
	}{
		{"whole GPU", Job{Spec: Spec{GPUs: 1}}, nil},
		{"mps with cap", Job{Spec: Spec{GPUShare: 0.25, GPUMemBytes: 20 << 30}, ShareMode: ShareMPS}, []string{"25% MPS share", "capped at 20 GiB"}},
		{"mps without cap", Job{Spec: Spec{GPUShare: 0.5}, ShareMode: ShareMPS}, []string{"50% MPS share", "not capped"}},
		{"time-sliced", Job{Spec: Spec{GPUShare: 0.25, GPUMemBytes: 20 << 30}, ShareMode: ShareTimeSliced}, []string{"time-sliced", "uncapped"}},
		{"unknown mode", Job{Spec: Spec{GPUShare: 0.25}}, []string{"uncapped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.job.ShareNote()
			if len(tt.want) == 0 && got != "" {
				t.Fatalf("ShareNote = %q; want none", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("ShareNote = %q; want it to say %q", got, w)
				}
			}
		})
	}
}

// TestShareMode: the executor's capability decides, and only a share has one.
func TestShareMode(t *testing.T) {
	if m := shareMode(Spec{GPUShare: 0.5}, Capabilities{MPS: true}); m != ShareMPS {
		t.Errorf("shareMode with MPS = %q", m)
	}
	if m := shareMode(Spec{GPUShare: 0.5}, Capabilities{}); m != ShareTimeSliced {
		t.Errorf("shareMode without MPS = %q", m)
	}
	if m := shareMode(Spec{GPUs: 1}, Capabilities{MPS: true}); m != "" {
		t.Errorf("shareMode of a whole GPU = %q", m)
	}
}

// TestNoMPSEnv: a job may not set the MPS variables the agent sets from
// its share (it would lift its own caps, or reach another daemon).
func TestNoMPSEnv(t *testing.T) {
	for _, e := range []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=80G",
		"CUDA_MPS_PIPE_DIRECTORY=/tmp/x", "cuda_mps_sm_partition=x", "CUDA_MPS_LOG_DIRECTORY=/x"} {
		var refused *RefusedError
		err := Validate(Spec{Image: "i", GPUShare: 0.25, Env: []string{e}}, dockerCaps, nil, 1)
		if !errors.As(err, &refused) || refused.Rule != "no-mps-env" {
			t.Errorf("env %s: Validate = %v; want refused by no-mps-env", e, err)
		}
	}
	if err := Validate(Spec{Image: "i", GPUShare: 0.25, Env: []string{"CUDA_HOME=/usr/local/cuda"}}, dockerCaps, nil, 1); err != nil {
		t.Errorf("CUDA_HOME refused: %v", err)
	}
}

// TestSubmitShare: a share reaches the executor with its one GPU, its
// fraction and its cap; the job says how it is enforced; a cap over the
// GPUs' memory is refused before anything starts.
func TestSubmitShare(t *testing.T) {
	for _, mps := range []bool{false, true} {
		rt := newFakeRuntime()
		rt.caps.MPS = mps
		m := newTestManager(t, rt, 2, &memStore{})
		j, err := m.Submit(context.Background(), member("OWNER"), Spec{Image: "img", GPUShare: 0.25, GPUMemBytes: 20 << 30})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: ShareTimeSliced, true: ShareMPS}[mps]
		if j.State != Running || len(j.GPUs) != 1 || j.ShareMode != want {
			t.Fatalf("MPS %v: job %+v; want running on one GPU, share mode %s", mps, j, want)
		}
		l := rt.launches[len(rt.launches)-1]
		if len(l.GPUs) != 1 || l.GPUShare != 0.25 || l.GPUMemBytes != 20<<30 {
			t.Errorf("MPS %v: task GPUs %v share %v cap %d", mps, l.GPUs, l.GPUShare, l.GPUMemBytes)
		}
		_, err = m.Submit(context.Background(), member("OWNER"), Spec{Image: "img", GPUShare: 0.25, GPUMemBytes: 96 << 30})
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.Rule != "gpu-mem" || !strings.Contains(err.Error(), "80 GiB") {
			t.Errorf("MPS %v: a 96 GiB cap on 80 GiB GPUs: %v", mps, err)
		}
	}
}
