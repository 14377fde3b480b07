//go:build linux

package containers

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers/dockertest"
)

// TestLoadProgress: a load reports the archive's bytes as they are read,
// then that it was received whole, then the engine's own progress (Docker's
// "Loading layer" with its bytes), in that order, before it returns.
func TestLoadProgress(t *testing.T) {
	r := openRuntime(t)
	host := dockertest.Engine(t)
	tag := fmt.Sprintf("labpool-test/progress:%d", time.Now().UnixNano())
	archive, _ := savedUnder(t, host, tag, strings.Repeat("layer bytes ", 50000))
	t.Cleanup(func() { exec.Command("docker", "-H", host, "rmi", tag).Run() })

	type line struct {
		done, total int64
		status      string
	}
	var mu sync.Mutex
	var lines []line
	tags, err := r.LoadImage(context.Background(), bytes.NewReader(archive), Rights{AnyName: true}, func(done, total int64, status string) {
		mu.Lock()
		lines = append(lines, line{done, total, status})
		mu.Unlock()
	})
	if err != nil || len(tags) != 1 || tags[0] != tag {
		t.Fatalf("LoadImage = %v, %v", tags, err)
	}
	received, layer := -1, -1
	for i, l := range lines {
		switch {
		case l.status == StatusReceived:
			if l.done <= 0 || l.done > int64(len(archive)) || l.total != l.done {
				t.Errorf("received line %+v, want done = total, up to %d", l, len(archive))
			}
			received = i
		case strings.HasPrefix(l.status, "Loading layer"):
			if l.total <= 0 || l.done > l.total {
				t.Errorf("engine line %+v: want its bytes done of a total", l)
			}
			if layer < 0 {
				layer = i
			}
		case l.status == "" && (l.total != 0 || l.done > int64(len(archive))):
			t.Errorf("transfer line %+v", l)
		}
	}
	if received < 1 || layer < received {
		t.Errorf("progress out of order: received at %d, first engine line at %d, of %d lines: %+v", received, layer, len(lines), lines)
	}
}
