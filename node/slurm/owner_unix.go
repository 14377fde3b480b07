//go:build unix

package slurm

import (
	"os"
	"syscall"
)

// fileOwner is the user and group that own fi.
func fileOwner(fi os.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
