package folders

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

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
	if err := fill(fd, data, m, true); err != nil {
		unix.Unlinkat(dirfd, partial, 0)
		return WriteError(name, err)
	}
	if err := unix.Renameat(dirfd, partial, dirfd, base); err != nil {
		return fmt.Errorf("put %s in place: %w", name, err)
	}
	return nil
}

// PutNew writes data as the file name (a clean path) with m's mode and
// time straight under its name, in two system calls fewer than Put (no
// rename, and the mode given at creation where the umask keeps it). It is
// for a tree that a copy stages under a partial name of its own, where no
// name is final until the whole tree is renamed into place. A file already
// there (left by an interrupted copy), or a link, is replaced as Put does;
// a failed write leaves nothing under the name.
func (d *DirRoots) PutNew(name string, data []byte, m FileMeta) error {
	dirfd, base, err := d.split(name)
	if err != nil {
		return fmt.Errorf("open the directory of %s: %w", name, err)
	}
	perm := uint32(m.Mode.Perm())
	fd, err := unix.Openat(dirfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
	if errors.Is(err, unix.EEXIST) {
		return d.Put(name, data, m)
	}
	if err != nil {
		return WriteError(name, err)
	}
	if err := fill(fd, data, m, perm&umask() != 0); err != nil {
		unix.Unlinkat(dirfd, base, 0)
		return WriteError(name, err)
	}
	return nil
}

// fill writes data to the new file fd, sets its mode (when chmod) and
// modification time to m's, and closes it.
func fill(fd int, data []byte, m FileMeta, chmod bool) error {
	var err error
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
	if err == nil && chmod {
		err = unix.Fchmod(fd, uint32(m.Mode.Perm()))
	}
	if err == nil {
		t := unix.NsecToTimespec(m.MTime.UnixNano())
		err = unix.UtimesNanoAt(fd, "", []unix.Timespec{t, t}, unix.AT_EMPTY_PATH)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// umask is this process's file mode creation mask, read once from
// /proc/self/status (Linux 4.7 and later) rather than by setting it, which
// would change it for every other file being created meanwhile. Where it
// cannot be read, every bit counts as masked: modes are then always set.
var umask = sync.OnceValue(func() uint32 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(m) & 0o777
			}
		}
	}
	return 0o777
})
