//go:build !unix && !windows

package main

import "os/exec"

// detach leaves cmd as it is: a child process outlives its parent here.
func detach(*exec.Cmd) {}
