package main

import (
	"os"
	"path/filepath"
	"runtime"
)

// agentBinaryName is the file name of the headless build of labpool that
// the desktop build ships beside itself on goos (make desktop builds both;
// make install installs both): the window starts its background agent from
// it, so that the agent costs what `labpool agent` costs on a server (no GTK
// or WebKit mapped and relocated into it: 47 MB against the GUI binary's
// 87 MB). Windows runs only a name with .exe.
func agentBinaryName(goos string) string {
	if goos == "windows" {
		return "labpool-agent.exe"
	}
	return "labpool-agent"
}

// agentBinary is the program the window starts as its agent: the headless
// build beside exe (the window's own binary) when there is one, else exe
// itself (one binary, at the cost of the GUI libraries), and whether it is
// the headless one.
func agentBinary(exe string) (path string, headless bool) {
	return agentBinaryFor(runtime.GOOS, exe)
}

// agentBinaryFor is agentBinary by goos's rules: a regular file of
// agentBinaryName(goos) beside exe, executable by its mode bits except on
// Windows, whose file modes have no execute bit (Go reports 0666 or 0444:
// the .exe name is what makes it a program).
func agentBinaryFor(goos, exe string) (path string, headless bool) {
	p := filepath.Join(filepath.Dir(exe), agentBinaryName(goos))
	st, err := os.Stat(p)
	if err == nil && st.Mode().IsRegular() && (goos == "windows" || st.Mode().Perm()&0o111 != 0) {
		return p, true
	}
	return exe, false
}
