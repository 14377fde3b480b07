package jobs_test

import (
	"strconv"
	"testing"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/jobs/executortest"
)

// TestFakeConformance: the tests' fake executor behaves as the suite says
// every executor does, so that the manager's tests over it hold for the
// real ones.
func TestFakeConformance(t *testing.T) {
	executortest.Run(t, executortest.Harness{
		New:            func(*testing.T) jobs.Executor { return jobs.FakeExecutor() },
		Restart:        func(_ *testing.T, ex jobs.Executor) jobs.Executor { return jobs.RestartFake(ex) },
		Task:           jobs.Task{Image: "img"},
		Exit:           func(code int) []string { return []string{"exit", strconv.Itoa(code)} },
		Print:          func(lines ...string) []string { return append([]string{"print"}, lines...) },
		Forever:        []string{"sleep"},
		PrintThenSleep: func(lines ...string) []string { return append([]string{"print-sleep"}, lines...) },
	})
}
