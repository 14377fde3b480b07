package folders

import (
	"errors"
	"os"
	"path"
	"time"
)

// Limit bounds a measure of a share.
type Limit struct {
	Entries int           // stop after this many entries (0: no bound)
	Time    time.Duration // stop after this long (0: no bound)
}

// DefaultLimit bounds the periodic measure of each share.
var DefaultLimit = Limit{Entries: 200_000, Time: 5 * time.Second}

// Size is what a measure found.
type Size struct {
	Bytes int64
	Files int
	// AtLeast is true when the walk stopped at its limit: the share holds
	// at least Bytes in at least Files.
	AtLeast bool
}

// errLimit stops a measure.
var errLimit = errors.New("measure limit reached")

// Measure walks a share's tree within lim and returns its size and file
// count; symlinks are counted, never followed. Parts that cannot be read
// are skipped. It reads one directory at a time, a batch of entries at a
// time, so that neither a deep tree nor a huge directory passes the limit
// by much.
func Measure(root *os.Root, lim Limit) Size {
	m := measure{root: root, lim: lim, start: time.Now()}
	if err := m.dir("."); errors.Is(err, errLimit) {
		m.size.AtLeast = true
	}
	return m.size
}

type measure struct {
	root    *os.Root
	lim     Limit
	start   time.Time
	entries int
	size    Size
}

func (m *measure) dir(name string) error {
	subs, err := m.list(name)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if err := m.dir(s); err != nil {
			return err
		}
	}
	return nil
}

// list counts the entries of the directory name and returns its
// subdirectories; the directory is closed before they are read.
func (m *measure) list(name string) ([]string, error) {
	f, err := m.root.Open(name)
	if err != nil {
		return nil, nil // unreadable: skipped
	}
	defer f.Close()
	var subs []string
	for {
		des, err := f.ReadDir(256)
		for _, de := range des {
			m.entries++
			if de.IsDir() {
				subs = append(subs, path.Join(name, de.Name()))
				continue
			}
			m.size.Files++
			if de.Type().IsRegular() {
				if info, err := de.Info(); err == nil {
					m.size.Bytes += info.Size()
				}
			}
		}
		if m.over() {
			return nil, errLimit
		}
		if err != nil {
			return subs, nil // io.EOF, or unreadable past here
		}
	}
}

func (m *measure) over() bool {
	return m.lim.Entries > 0 && m.entries >= m.lim.Entries || m.lim.Time > 0 && time.Since(m.start) >= m.lim.Time
}

// Usage walks a share's whole tree and returns its total size and file
// count, as Measure without a limit.
func Usage(root *os.Root) (size int64, files int, err error) {
	s := Measure(root, Limit{})
	return s.Bytes, s.Files, nil
}
