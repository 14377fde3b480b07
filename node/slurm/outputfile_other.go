//go:build !unix

package slurm

import (
	"fmt"
	"os"
	"runtime"
)

// errNoSlurmHere is what every Slurm file operation answers where Slurm
// cannot run.
var errNoSlurmHere = fmt.Errorf("slurm runs only on Linux and Unix: this agent runs on %s", runtime.GOOS)

func openOutput(path string, a account) (*os.File, error) {
	return nil, fmt.Errorf("open the output %s of job account %s: %w", path, a.Name, errNoSlurmHere)
}

func checkOutput(_ int, path string, a account) error {
	return fmt.Errorf("check the output %s of job account %s: %w", path, a.Name, errNoSlurmHere)
}
