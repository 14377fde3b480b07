package folders

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// fdDir reads a directory through its file descriptor: getdents, then one
// fstatat per entry, with no per-entry path walk and little garbage. The
// top comes from os.Root, and every subdirectory is opened relative to its
// parent with O_NOFOLLOW, so the walk stays inside the root even while
// someone swaps a directory for a symlink.
type fdDir struct {
	fd   int
	name string // for messages
}

func openTop(root *os.Root, name string) (dirReader, error) {
	fd, err := openDirFD(root, name)
	if err != nil {
		return nil, err
	}
	return fdDir{fd: fd, name: name}, nil
}

// openDirFD opens the directory name of root and returns its descriptor.
func openDirFD(root *os.Root, name string) (int, error) {
	f, err := root.Open(name)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return -1, &os.PathError{Op: "dup", Path: name, Err: err}
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

func (d fdDir) list() ([]FileMeta, error) {
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := unix.Getdents(d.fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "readdir", Path: d.name, Err: err}
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	slices.Sort(names)
	out := make([]FileMeta, 0, len(names))
	var st unix.Stat_t
	for _, name := range names {
		if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed since it was listed
			}
			return nil, &os.PathError{Op: "lstat", Path: path.Join(d.name, name), Err: err}
		}
		m := FileMeta{Rel: name, Size: st.Size, Mode: fs.FileMode(st.Mode & 0o777), MTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC()}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			m.Dir = true
		case unix.S_IFREG:
		case unix.S_IFLNK:
			target, err := readlinkat(d.fd, name)
			if err != nil {
				return nil, &os.PathError{Op: "readlink", Path: path.Join(d.name, name), Err: err}
			}
			m.Link, m.Size = target, 0
		default:
			return nil, fmt.Errorf("%s is neither a file, a directory nor a link", path.Join(d.name, name))
		}
		out = append(out, m)
	}
	return out, nil
}

func (d fdDir) sub(name string) (dirReader, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path.Join(d.name, name), Err: err}
	}
	return fdDir{fd: fd, name: path.Join(d.name, name)}, nil
}

func (d fdDir) close() { unix.Close(d.fd) }

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
