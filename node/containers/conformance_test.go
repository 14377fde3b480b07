//go:build linux

package containers

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers/dockertest"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/jobs/executortest"
)

// TestDockerConformance runs the executor suite against a real dockerd.
func TestDockerConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a docker engine: skipped in -short mode")
	}
	cfg := DefaultConfig()
	cfg.Host = dockertest.Engine(t)
	cfg.Node = fmt.Sprintf("CONFORMANCE-%d", time.Now().UnixNano()) // List sees this run's containers only
	open := func(t *testing.T) jobs.Executor {
		rt, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		return NewExecutor(rt, ExecutorConfig{})
	}
	printf := `for l; do echo "$l"; done`
	executortest.Run(t, executortest.Harness{
		New:     open,
		Restart: func(t *testing.T, _ jobs.Executor) jobs.Executor { return open(t) },
		Task:    jobs.Task{Image: dockertest.Image, Labels: map[string]string{LabelNode: cfg.Node}},
		Exit:    func(code int) []string { return []string{"sh", "-c", "exit " + strconv.Itoa(code)} },
		Print: func(lines ...string) []string {
			return append([]string{"sh", "-c", printf, "sh"}, lines...)
		},
		Forever: []string{"sleep", "3600"},
		PrintThenSleep: func(lines ...string) []string {
			return append([]string{"sh", "-c", printf + "; exec sleep 3600", "sh"}, lines...)
		},
		Grace: 2 * time.Second,
	})
}
