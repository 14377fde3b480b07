package main

import (
	"os"
	"path/filepath"
)

// agentBinaryName is the headless build of labpool that the desktop build
// ships beside itself (make desktop builds both; make install installs
// both): the window starts its background agent from it, so that the agent
// costs what `labpool agent` costs on a server (no GTK or WebKit mapped
// and relocated into it: 47 MB against the GUI binary's 87 MB).
const agentBinaryName = "labpool-agent"

// agentBinary is the program the window starts as its agent: the headless
// build beside exe (the window's own binary) when there is one, else exe
// itself (one binary, at the cost of the GUI libraries), and whether it is
// the headless one.
func agentBinary(exe string) (path string, headless bool) {
	p := filepath.Join(filepath.Dir(exe), agentBinaryName)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return p, true
	}
	return exe, false
}
