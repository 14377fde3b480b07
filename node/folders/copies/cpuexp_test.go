package copies

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkFreshTreeCPU(b *testing.B) {
	src := b.TempDir()
	smallTree(b, src, 20000)
	rs, _ := os.OpenRoot(src)
	for _, streams := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprint(streams), func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				rd, _ := os.OpenRoot(b.TempDir())
				b.StartTimer()
				c := cpuNow()
				p := &Pull{Src: RootSource{rs}, SrcPath: "top", SrcName: "top", Dst: rd, DstPath: ".", Streams: streams}
				if _, err := p.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				cpu += cpuNow() - c
				b.StopTimer()
				rd.Close()
				b.StartTimer()
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
