//go:build unix

package host

import (
	"os"
	"syscall"
)

// deviceOf returns the ID of the device holding the file fi describes.
func deviceOf(fi os.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true
}
