//go:build linux

package slurmtest

import (
	"os"
	"os/exec"
	"os/user"
	"testing"
)

// binaries are what Start runs.
var binaries = []string{"slurmctld", "slurmd", "munged", "sbatch", "squeue", "sinfo", "scontrol",
	"scancel", "srun", "nsenter", "ip", "runuser", "setpriv", "useradd", "userdel"}

// requireSlurm skips the test (fails it under CI=true) when this machine
// cannot run a test cluster.
func requireSlurm(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("slurm cluster: skipped in -short mode")
	}
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root (network namespaces, munged as the munge user, slurmd)"
	}
	for _, b := range binaries {
		if _, err := exec.LookPath(b); err != nil && why == "" {
			why = b + " is not installed (apt-get install slurm-wlm munge iproute2 util-linux)"
		}
	}
	if _, err := user.Lookup("munge"); err != nil && why == "" {
		why = "no munge user (apt-get install munge)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("slurm cluster needed under CI: %s", why)
	}
	t.Skip("slurm cluster: " + why)
}
