package web

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peerOf reads the credentials of c's peer: SO_PEERCRED for the user,
// group and process, SO_PEERGROUPS (Linux 4.13) for the supplementary
// groups, all as they were when the peer connected.
func peerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("read peer credentials: %T is no unix socket", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("read peer credentials: %w", err)
	}
	var p Peer
	var serr error
	err = raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); serr != nil {
			return
		}
		p = Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}
		p.Groups, serr = peerGroups(int(fd))
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return Peer{}, fmt.Errorf("read peer credentials: %w", err)
	}
	return p, nil
}

// peerGroups reads SO_PEERGROUPS, growing the buffer when the kernel
// answers ERANGE with the length it needs (NGROUPS_MAX is 65536).
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 64)
	for range 2 {
		n := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch {
		case errno == 0:
			return buf[:n/4], nil
		case errno == unix.ERANGE && n/4 > uint32(len(buf)) && n/4 <= 65536:
			buf = make([]uint32, n/4)
		default:
			return nil, fmt.Errorf("SO_PEERGROUPS: %w", errno)
		}
	}
	return nil, errors.New("SO_PEERGROUPS: the peer's groups changed size twice")
}
