package cli

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/gpu"
)

func TestWriteGPUsTopology(t *testing.T) {
	link := func(peer, nv int, pcie string) gpu.Link { return gpu.Link{Peer: peer, NVLinks: nv, PCIe: pcie} }
	gpus := []app.GPU{
		{Node: "A", NodeName: "dgx", Index: 0, Name: "NVIDIA A100", Health: "ok",
			Links: []gpu.Link{link(1, 12, "PIX"), link(2, 0, "SYS")}, MIG: &gpu.MIG{Supported: true}},
		{Node: "A", NodeName: "dgx", Index: 1, Name: "NVIDIA A100", Health: "ok",
			Links: []gpu.Link{link(0, 12, "PIX"), link(2, 0, "SYS")}, MIG: &gpu.MIG{Supported: true, Pending: true}},
		{Node: "A", NodeName: "dgx", Index: 2, Name: "NVIDIA A100", Health: "ok",
			Links: []gpu.Link{link(0, 0, "SYS"), link(1, 0, "SYS")},
			MIG: &gpu.MIG{Supported: true, Enabled: true, Instances: []gpu.MIGInstance{
				{UUID: "MIG-5c9f1a2e-0000-0000-0000-000000000001", Name: "NVIDIA A100-SXM4-40GB MIG 3g.20gb", GPUInstance: 1, MemTotalBytes: 20 << 30},
			}}},
		{Node: "B", NodeName: "t4box", Index: 0, Name: "NVIDIA T4", Health: "ok", Links: []gpu.Link{}},
	}
	var b strings.Builder
	if err := writeGPUs(&b, gpus); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{
		"dgx topology", "GPU0  GPU1  GPU2",
		"GPU0  X     NV12  SYS", "GPU1  NV12  X     SYS", "GPU2  SYS   SYS   X",
		"dgx MIG:", "MIG supported, off: GPUs 0, 1 (on after a reset)",
		"GPU 2: MIG on, 1 instance",
		"MIG-5c9f1a2e-0000-0000-0000-000000000001  NVIDIA A100-SXM4-40GB MIG 3g.20gb  20.0 GiB  (GPU instance 1, compute instance 0)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("labpool gpus does not say %q", want)
		}
	}
	if strings.Contains(out, "t4box topology") || strings.Contains(out, "t4box MIG") {
		t.Error("a machine without links or MIG gets a topology or MIG section")
	}
}
