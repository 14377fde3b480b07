//go:build linux && cgo

package agent

import (
	"encoding/json"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
	"github.com/labpool/labpool/node/host"
)

// BenchmarkTelemetryTick measures one 1 Hz tick as the daemon runs it: the
// real host sampler, 8 fake GPUs through gpu.Sampler, and 3 subscribers
// that each JSON-encode the sample. ns/op divided by 1e9 is the fraction of
// one core that sampling at 1 Hz costs.
func BenchmarkTelemetryTick(b *testing.B) {
	lib := gputest.NewLibrary(8)
	for i, d := range lib.Devices { // a busy machine: 2 processes per GPU
		d.Compute = []nvml.ProcessInfo{{Pid: uint32(1000 + i), UsedGpuMemory: 30 << 30}, {Pid: uint32(2000 + i), UsedGpuMemory: 1 << 30}}
	}
	g, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	tel := New(DefaultConfig(), g, host.NewSampler(host.DefaultConfig()), discard())
	var subs []<-chan Sample
	for range 3 {
		ch, cancel := tel.Subscribe()
		defer cancel()
		subs = append(subs, ch)
	}
	ctx := b.Context()
	tel.tick(ctx) // the first tick reads the mount list
	for _, ch := range subs {
		<-ch
	}
	b.ReportAllocs()
	for b.Loop() {
		tel.tick(ctx)
		for _, ch := range subs {
			if _, err := json.Marshal(<-ch); err != nil {
				b.Fatal(err)
			}
		}
	}
}
