package folders

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// DirRoots opens the directories under one root, each once, as file
// descriptors: a small file is then read or written by its name alone, in
// a few plain system calls. Going through os.Root for each file costs
// about a dozen more (a path walk that checks for links, and the
// registration of every file with the poller), and with many small files
// those calls are most of the time.
//
// The directories come from os.Root, so they are inside it; files are then
// opened by a single name with O_NOFOLLOW, so a link planted in a
// directory is never followed, and a directory swapped for a link after
// it was opened is not left either: its descriptor still names the
// directory that was inside.
type DirRoots struct {
	root *os.Root
	open map[string]int // directory ("" for the top) -> descriptor
}

// NewDirRoots opens directories under root as they are needed; Close
// closes them.
func NewDirRoots(root *os.Root) *DirRoots {
	return &DirRoots{root: root, open: map[string]int{}}
}

// split returns a descriptor of the directory of name (a clean path under
// the root) and name's last element.
func (d *DirRoots) split(name string) (int, string, error) {
	dir, base := path.Split(name)
	if fd, ok := d.open[dir]; ok {
		return fd, base, nil
	}
	top := "."
	if dir != "" {
		top = path.Clean(dir)
	}
	fd, err := openDirFD(d.root, top)
	if err != nil {
		return -1, "", err
	}
	d.open[dir] = fd
	return fd, base, nil
}

// Close closes the directories opened.
func (d *DirRoots) Close() {
	for _, fd := range d.open {
		unix.Close(fd)
	}
}

// read reads the small regular file name (a clean path).
func (d *DirRoots) read(name string) ([]byte, error) {
	dirfd, base, err := d.split(name)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: a fifo swapped in since the walk must not hang the read.
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > BlockSize {
		return nil, fmt.Errorf("%s is not a small regular file", name)
	}
	data := make([]byte, st.Size)
	for got := 0; got < len(data); {
		n, err := unix.Read(fd, data[got:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return nil, fmt.Errorf("read %s: it shrank while it was read", name)
		}
		got += n
	}
	return data, nil
}

// Put writes data as the file name (a clean path) with m's mode and time:
// under a partial name first, renamed once complete.
func (d *DirRoots) Put(name string, data []byte, m FileMeta) error {
	dirfd, base, err := d.split(name)
	if err != nil {
		return fmt.Errorf("open the directory of %s: %w", name, err)
	}
	partial := PartialName(base)
	// O_NONBLOCK: a fifo planted under the partial name fails at once
	// rather than hang the copy (it means nothing to a regular file).
	fd, err := unix.Openat(dirfd, partial, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return WriteError(name, err)
	}
	for rest := data; len(rest) > 0; {
		n, werr := unix.Write(fd, rest)
		if errors.Is(werr, unix.EINTR) {
			continue
		}
		if werr != nil {
			err = werr
			break
		}
		rest = rest[n:]
	}
	if err == nil {
		err = unix.Fchmod(fd, uint32(m.Mode.Perm()))
	}
	if err == nil {
		t := unix.NsecToTimespec(m.MTime.UnixNano())
		err = unix.UtimesNanoAt(fd, "", []unix.Timespec{t, t}, unix.AT_EMPTY_PATH)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(dirfd, partial, 0)
		return WriteError(name, err)
	}
	if err := unix.Renameat(dirfd, partial, dirfd, base); err != nil {
		return fmt.Errorf("put %s in place: %w", name, err)
	}
	return nil
}
