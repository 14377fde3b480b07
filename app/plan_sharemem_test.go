package app

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/node/jobs"
)

// TestPlanShareMemOverGPU: a share capped above the memory of every GPU of
// a machine is refused by the plan naming the rule and the GPU's memory,
// as the machine's ledger refuses it, never said to be "busy".
func TestPlanShareMemOverGPU(t *testing.T) {
	nodes := []Node{{ID: mikeID, Name: "mike", Online: true, Containers: true,
		GPUs: []GPU{{Node: mikeID, Index: 0, UUID: "GPU-0", Name: "H100", MemTotalBytes: 80 << 30}}}}
	for _, tt := range []struct {
		spec jobs.Spec
		fits bool
		want string
	}{
		{jobs.Spec{Image: "nb:1", GPUShare: 0.5, GPUMemBytes: 100 << 30}, false, `refused by rule "gpu-mem"`},
		{jobs.Spec{Image: "nb:1", GPUShare: 0.5, GPUMemBytes: 100 << 30}, false, "has 80 GiB"},
		{jobs.Spec{Image: "nb:1", GPUShare: 0.5, GPUMemBytes: 40 << 30}, true, ""},
	} {
		p := plan(nodes, nil, tt.spec, nil)
		if p.Fits != tt.fits || !strings.Contains(p.Reason, tt.want) {
			t.Errorf("plan of a share capped at %d GiB: fits %v: %s; want fits %v, naming %q",
				tt.spec.GPUMemBytes>>30, p.Fits, p.Reason, tt.fits, tt.want)
		}
	}
}
