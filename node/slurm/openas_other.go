//go:build !linux

package slurm

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// ServeOpenOutput refuses: handing an open file over a Unix socket
// (SCM_RIGHTS, with close-on-exec) is done on Linux only, where Slurm's
// compute nodes run.
func ServeOpenOutput(_ []string, _, stderr *os.File) int {
	fmt.Fprintf(stderr, "labpool %s runs on Linux only, where Slurm runs (this is %s)\n", OpenOutputVerb, runtime.GOOS)
	return openRefused
}

// OpenAs refuses as ServeOpenOutput does.
func (r *CmdRunner) OpenAs(_ context.Context, user, path string) (*os.File, error) {
	return nil, fmt.Errorf("open %s as %s: Slurm job output is read on Linux only (this agent runs on %s)", path, user, runtime.GOOS)
}
