package app

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/node/jobs"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 GPUs"}, {1, "1 GPU"}, {2, "2 GPUs"}, {-1, "-1 GPUs"}} {
		if got := count(tc.n, "GPU"); got != tc.want {
			t.Errorf("count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestPlanSaysOneGPU: a plan over a machine of one GPU says "1 GPU", never
// "1 GPUs" ("1 free GPUs", "of 1 GPUs", "has 1 GPUs").
func TestPlanSaysOneGPU(t *testing.T) {
	nodes, active := planPool()
	one := nodes[2] // off: 1 GPU
	one.Online = true
	for _, spec := range []jobs.Spec{{GPUs: 1}, {GPUs: 2}, {}, {GPUIDs: []int{0}}} {
		p := plan([]Node{one}, nil, spec, active)
		named := plan([]Node{one}, &one, spec, active)
		for _, r := range []string{p.Reason, named.Reason} {
			if strings.Contains(r, " 1 GPUs") || strings.Contains(r, "1 free GPUs") {
				t.Errorf("spec %+v: %q", spec, r)
			}
		}
	}
}
