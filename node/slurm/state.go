package slurm

import (
	"github.com/labpool/labpool/node/jobs"
)

// taskState maps a Slurm job state to labpool's, with the exit code and
// whether memory killed it:
//
//	PENDING, REQUEUED...        pending (Reason says why)
//	RUNNING, COMPLETING...      running
//	COMPLETED                   exited, code 0
//	FAILED                      exited with its code; failed when it has none
//	                            (it could not start: LAUNCH_FAILED, BOOT_FAIL too)
//	CANCELLED, PREEMPTED        cancelled
//	TIMEOUT, DEADLINE           timed_out
//	OUT_OF_MEMORY               exited, OOM
//	NODE_FAIL                   failed
func taskState(j Job) (state jobs.TaskState, code int, oom bool) {
	switch j.State {
	case "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
		"CONFIGURING", "POWER_UP_NODE":
		return jobs.TaskPending, 0, false
	case "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING", "STAGE_OUT":
		return jobs.TaskRunning, 0, false
	case "COMPLETED":
		return jobs.TaskExited, 0, false
	case "FAILED":
		if j.ExitCode != 0 {
			return jobs.TaskExited, j.ExitCode, false
		}
		if j.Signal != 0 {
			return jobs.TaskExited, 128 + j.Signal, false
		}
		return jobs.TaskFailed, 0, false
	case "CANCELLED", "PREEMPTED":
		return jobs.TaskCancelled, j.ExitCode, false
	case "TIMEOUT", "DEADLINE":
		return jobs.TaskTimedOut, j.ExitCode, false
	case "OUT_OF_MEMORY":
		return jobs.TaskExited, max(j.ExitCode, 137), true
	case "NODE_FAIL", "BOOT_FAIL", "LAUNCH_FAILED", "RECONFIG_FAIL", "SPECIAL_EXIT", "REVOKED":
		return jobs.TaskFailed, j.ExitCode, false
	}
	if Ended(j.State) {
		return jobs.TaskFailed, j.ExitCode, false
	}
	return jobs.TaskPending, 0, false
}

// reason is what the task's Reason says: Slurm's pending reason, or how
// it failed.
func reason(j Job, state jobs.TaskState) string {
	switch state {
	case jobs.TaskPending, jobs.TaskFailed:
		if j.Reason != "" {
			return j.Reason
		}
		if state == jobs.TaskFailed {
			return j.State
		}
	}
	return ""
}
