//go:build !linux

package slurm

import (
	"errors"
	"os"
)

// memFile is unavailable here: commands write to pipes.
func memFile(string) (*os.File, error) {
	return nil, errors.New("no memfd on this system")
}

// waitExit returns at once: the caller's Wait waits.
func waitExit(int) {}
