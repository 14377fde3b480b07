package mps

import (
	"reflect"
	"testing"
)

func TestThreadPercent(t *testing.T) {
	tests := []struct {
		share float64
		want  int
	}{{0.25, 25}, {0.5, 50}, {0.01, 1}, {0.333, 34}, {0.999, 100}, {0.29, 29}, {0.001, 1}}
	for _, tt := range tests {
		if got := ThreadPercent(tt.share); got != tt.want {
			t.Errorf("ThreadPercent(%v) = %d; want %d", tt.share, got, tt.want)
		}
	}
}

func TestMemLimit(t *testing.T) {
	tests := []struct {
		b    uint64
		want string
	}{{20 << 30, "0=20480M"}, {(1 << 30) + 1, "0=1024M"}, {1, "0=1M"}}
	for _, tt := range tests {
		if got := MemLimit(tt.b); got != tt.want {
			t.Errorf("MemLimit(%d) = %q; want %q", tt.b, got, tt.want)
		}
	}
}

func TestClientEnv(t *testing.T) {
	tests := []struct {
		name string
		c    Client
		want []string
	}{
		{"threads and cap", Client{PipeDir: "/p", ThreadPercent: 25, MemBytes: 20 << 30},
			[]string{"CUDA_MPS_PIPE_DIRECTORY=/p", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480M"}},
		{"no cap", Client{PipeDir: "/p", ThreadPercent: 50}, []string{"CUDA_MPS_PIPE_DIRECTORY=/p", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"}},
		{"partition", Client{PipeDir: "/p", ThreadPercent: 50, Partition: "GPU-a/x"},
			[]string{"CUDA_MPS_PIPE_DIRECTORY=/p", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50", "CUDA_MPS_SM_PARTITION=GPU-a/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Env(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Env = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestReserved(t *testing.T) {
	for k, want := range map[string]bool{"CUDA_MPS_PIPE_DIRECTORY": true, "cuda_mps_active_thread_percentage": true, "CUDA_MPS_X": true, "CUDA_HOME": false, "PATH": false} {
		if Reserved(k) != want {
			t.Errorf("Reserved(%q) = %v", k, !want)
		}
	}
}

func TestParseLspart(t *testing.T) {
	tests := []struct {
		in         string
		free, used int
		ok         bool
	}{
		{"GPU-f6 free chunks 0, used chunks 18, free SM 0, used SM 72\npartition 1: 9 chunks, 36 SM\n", 0, 18, true},
		{"GPU-f6 free chunks 33, used chunks 0, free SM 132, used SM 0", 33, 0, true},
		{"no partitions", 0, 0, false},
		{"free chunks x, used chunks 1", 0, 0, false},
	}
	for _, tt := range tests {
		free, used, err := parseLspart(tt.in)
		if (err == nil) != tt.ok || (tt.ok && (free != tt.free || used != tt.used)) {
			t.Errorf("parseLspart(%q) = %d, %d, %v", tt.in, free, used, err)
		}
	}
}

func TestParseCreated(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Partition GPU-f6b3/AbC+/= created\n", ""},
		{"Partition GPU-f6b3/AbC9 created\n", "GPU-f6b3/AbC9"},
		{"Failed to create partition", ""},
		{"Partition  created", ""},
	}
	for _, tt := range tests {
		got, err := parseCreated(tt.in)
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("parseCreated(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestPrivateShm(t *testing.T) {
	name, args := privateShm("/run/x/shm", "/usr/bin/nvidia-cuda-mps-control", []string{"-d", "-S"})
	want := []string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", `mount --bind "$0" /dev/shm && exec "$@"`,
		"/run/x/shm", "/usr/bin/nvidia-cuda-mps-control", "-d", "-S"}
	if name != "unshare" || !reflect.DeepEqual(args, want) {
		t.Errorf("privateShm = %s %q", name, args)
	}
}
