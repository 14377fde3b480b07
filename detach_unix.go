//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach puts cmd in a session of its own: closing the window or its
// terminal does not stop it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
