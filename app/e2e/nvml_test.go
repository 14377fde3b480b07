package e2e

import (
	"context"
	"fmt"
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
	gpu1.useMockNVML("h100.yaml")
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
			g.SMClockMHz != h100.smMHz || g.MemClockMHz != h100.memMHz || g.UtilPercent != 0 || g.FanPercent != -1 {
			t.Errorf("gpu %d reads %+v; the profile states %+v", i, g, h100)
		}
	}
}
