package jobs

import "syscall"

// hostMemory is the host's memory in bytes, 0 if unknown.
func hostMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// fileOwner is the owner of a file.
func fileOwner(path string) (uid, gid uint32, ok bool) {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
