package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// TestRunShareFlags: --gpu-share, --gpu-mem and --mig reach the spec.
func TestRunShareFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    jobs.Spec
		wantErr string
	}{
		{"share and cap", []string{"--gpu-share", "0.25", "--gpu-mem", "20GiB", "img"},
			jobs.Spec{Image: "img", Cmd: []string{}, GPUShare: 0.25, GPUMemBytes: 20 << 30}, ""},
		{"mig profile", []string{"--mig", "3g.40gb", "--gpus", "2", "img"},
			jobs.Spec{Image: "img", Cmd: []string{}, GPUs: 2, MIGProfile: "3g.40gb"}, ""},
		{"bad size", []string{"--gpu-share", "0.5", "--gpu-mem", "lots", "img"}, jobs.Spec{}, "--gpu-mem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runSpec(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("spec = %v; want an error naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.GPUShare != tt.want.GPUShare || got.GPUMemBytes != tt.want.GPUMemBytes || got.MIGProfile != tt.want.MIGProfile || got.GPUs != tt.want.GPUs {
				t.Errorf("spec = %+v; want %+v", got, tt.want)
			}
		})
	}
}

// TestPsSaysUncapped: ps says a time-sliced share is uncapped.
func TestPsSaysUncapped(t *testing.T) {
	list := []app.Job{
		{Job: jobs.Job{ID: "a1", Name: "sliced", State: jobs.Running, GPUIndexes: []int{0}, Spec: jobs.Spec{GPUShare: 0.25}, ShareMode: jobs.ShareTimeSliced}},
		{Job: jobs.Job{ID: "b2", Name: "mps", State: jobs.Running, GPUIndexes: []int{1}, Spec: jobs.Spec{GPUShare: 0.5}, ShareMode: jobs.ShareMPS}},
	}
	var b bytes.Buffer
	if err := writeJobs(&b, list, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[0] 25% uncapped", "[1] 50% mps"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("ps:\n%s\nwant %q", b.String(), want)
		}
	}
}
