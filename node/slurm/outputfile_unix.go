//go:build unix

package slurm

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openOutput opens a job's output file for reading, refusing anything
// but a regular file of the job's account: not a link (O_NOFOLLOW: a job
// that swaps its output for a link to the agent's key gets an error),
// not another user's file (a hard link), not a FIFO (O_NONBLOCK: the
// open never waits). Rule "a job's output is its account's file".
func openOutput(path string, a account) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("%s is a symbolic link, not the job's output (rule: a job's output is its account's file)", path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := checkOutput(fd, path, a); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// checkOutput checks that the open file fd is a regular file of job
// account a (rule "a job's output is its account's file").
func checkOutput(fd int, path string, a account) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != a.UID {
		return fmt.Errorf("%s is not a file of job account %s (owner %d, mode %o): not the job's output (rule: a job's output is its account's file)",
			path, a.Name, st.Uid, st.Mode)
	}
	return nil
}
