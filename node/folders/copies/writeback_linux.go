package copies

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing a just-written range to
// disk now, so that the fsync before a file is put in place finds little
// left to do and a large copy's disk writes overlap its transfer.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
