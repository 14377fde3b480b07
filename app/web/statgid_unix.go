//go:build unix

package web

import (
	"os"
	"syscall"
)

// statGID is the group of the file st describes.
func statGID(st os.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Gid)
	}
	return -1
}
