//go:build linux

package slurm

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/jobs/executortest"
)

// TestSlurmConformance runs the executors' conformance suite against the
// real Slurm of needSlurm. A restarted executor shares the first one's
// state directory, as an agent restarted on the submit host would.
func TestSlurmConformance(t *testing.T) {
	c := needSlurm(t)
	cfg := realConfig(t, c)
	open := func(t *testing.T) jobs.Executor {
		e, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	executortest.Run(t, executortest.Harness{
		New:     open,
		Restart: func(t *testing.T, _ jobs.Executor) jobs.Executor { return open(t) },
		Exit:    func(code int) []string { return []string{"sh", "-c", "exit " + strconv.Itoa(code)} },
		Print:   func(lines ...string) []string { return append([]string{"printf", `%s\n`}, lines...) },
		Forever: []string{"sleep", "3600"},
		PrintThenSleep: func(lines ...string) []string {
			return append([]string{"sh", "-c", `printf '%s\n' "$@"; exec sleep 3600`, "sh"}, lines...)
		},
		Timeout: 30 * time.Second,
	})
}
