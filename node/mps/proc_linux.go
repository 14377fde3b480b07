package mps

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// supported: MPS runs on Linux.
const supported = true

// running says whether process pid lives: it answers signal 0 and has not
// ended waiting to be reaped ("Z" or "X" in /proc/PID/stat; a daemon
// re-parented to an init that does not reap still answers signal 0).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}
