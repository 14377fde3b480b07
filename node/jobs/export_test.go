package jobs

// FakeExecutor is the tests' in-memory executor, for the conformance suite
// (conformance_test.go, package jobs_test).
func FakeExecutor() Executor { return newFakeRuntime() }

// RestartFake is a new fake executor over the same tasks as ex, as a
// restarted agent opens it.
func RestartFake(ex Executor) Executor { return ex.(*fakeRuntime).again() }
