//go:build linux

package e2e

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// BenchmarkJoin measures, per iteration, a new device's join: from
// `labpool pool join CODE ADDR` until the member it asked lists it online
// (the admission signed, the log verified, the session up, its first
// sample in); admitted-median-ms is the command's own time (the CLI
// started, the admission signed and the log verified). Each iteration
// joins a fresh device (a new data directory) with a code of its own.
func BenchmarkJoin(b *testing.B) {
	l := newLAN(b, "lab1", "joiner")
	lab1, joiner := l.host("lab1"), l.host("joiner")
	lab1.agent()
	lab1.waitDaemon()
	mustCLI(b, lab1, "pool", "create")
	var took, admitted []time.Duration
	for i := range b.N {
		// A removal revokes the invite the device came in by: a code each.
		code := lastLine(mustCLI(b, lab1, "pool", "invite"))
		joiner.kill()
		os.RemoveAll(joiner.data)
		joiner.agent()
		joiner.waitDaemon()
		start := time.Now()
		mustCLI(b, joiner, "pool", "join", code, lab1.ip+":7420")
		admitted = append(admitted, time.Since(start))
		waitFor(b, 20*time.Second, fmt.Sprintf("joiner %d online on lab1", i), func() error { return liveNodes(lab1, "joiner") })
		took = append(took, time.Since(start))
		mustCLI(b, lab1, "pool", "remove", "joiner") // the next device takes the name
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(median(took)), "join-median-ms")
	b.ReportMetric(ms(slices.Max(took)), "join-max-ms")
	b.ReportMetric(ms(median(admitted)), "admitted-median-ms")
}
