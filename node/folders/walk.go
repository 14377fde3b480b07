package folders

import (
	"os"
	"runtime"
)

// Walk lists the tree at p of root (a file gives one entry), directories
// before what they hold, in lexical order. Directories are read in
// parallel: a listing is one lstat a file, and on a large tree those
// system calls are nearly the whole cost.
func Walk(root *os.Root, p string) ([]FileMeta, error) {
	m, d, err := walkTop(root, p)
	if err != nil || d == nil {
		return []FileMeta{m}, err
	}
	rest, err := newWalker().dir(d, "")
	return append([]FileMeta{m}, rest...), err
}

// WalkFunc is Walk handing each item to emit as soon as it and everything
// before it are known, so that a listing can cross the network while the
// tree is still being read. The top is checked before anything is emitted:
// an error then is the only result.
func WalkFunc(root *os.Root, p string, emit func(FileMeta) error) error {
	m, d, err := walkTop(root, p)
	if err != nil {
		return err
	}
	if err := emit(m); err != nil || d == nil {
		if d != nil {
			d.close()
		}
		return err
	}
	return newWalker().stream(d, "", emit)
}

// walkTop returns the top item of a walk and, for a directory, it opened.
func walkTop(root *os.Root, p string) (FileMeta, dirReader, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return FileMeta{}, nil, err
	}
	top, err := root.Lstat(clean)
	if err != nil {
		return FileMeta{}, nil, err
	}
	m, err := meta(root, clean, "", top)
	if err != nil || !top.IsDir() {
		return m, nil, err
	}
	d, err := openTop(root, clean)
	return m, d, err
}

func newWalker() *walker {
	return &walker{sem: make(chan struct{}, max(4, runtime.GOMAXPROCS(0)))}
}

// dirReader is one open directory of a walk; its subdirectories open
// relative to it, so a walk never leaves the tree it started in.
type dirReader interface {
	// list returns the directory's entries in lexical order, Rel holding
	// each one's name; an entry removed meanwhile is left out.
	list() ([]FileMeta, error)
	// sub opens the subdirectory name, refusing a symlink.
	sub(name string) (dirReader, error)
	close()
}

// walker reads directories, at most cap(sem) at once beside the caller.
type walker struct {
	sem chan struct{}
}

// readNow marks a subtree read in place: its listing is there.
var readNow = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// closed reports whether c is closed.
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// subtree is the listing of one subdirectory, read in the background or
// in place.
type subtree struct {
	after int // index of the directory's own entry
	items []FileMeta
	err   error
	done  chan struct{} // nil when read in place
}

// dir lists the tree under d (rel from the walk's top) and closes d.
func (w *walker) dir(d dirReader, rel string) ([]FileMeta, error) {
	var out []FileMeta
	err := w.stream(d, rel, func(m FileMeta) error {
		out = append(out, m)
		return nil
	})
	return out, err
}

// stream lists the tree under directory d (rel from the walk's top) in
// order, emitting each item once everything before it is known: d's own
// entries at once, each subtree as soon as it has been read. Subtrees are
// read in the background as the walker has room, ahead of the one being
// emitted; one whose turn comes first is read in place. It closes d.
func (w *walker) stream(d dirReader, rel string, emit func(FileMeta) error) error {
	defer d.close()
	own, err := d.list()
	if err != nil {
		return err
	}
	names := make([]string, len(own))
	var subs []*subtree
	for i := range own {
		names[i] = own[i].Rel
		own[i].Rel = join(rel, names[i])
		if own[i].Dir {
			subs = append(subs, &subtree{after: i})
		}
	}
	read := func(s *subtree) ([]FileMeta, error) {
		sd, err := d.sub(names[s.after])
		if err != nil {
			return nil, err
		}
		return w.dir(sd, own[s.after].Rel)
	}
	ahead := 0 // subs before it have been started
	launch := func() {
		for ; ahead < len(subs); ahead++ {
			select {
			case w.sem <- struct{}{}:
			default:
				return
			}
			s := subs[ahead]
			s.done = make(chan struct{})
			go func() {
				defer close(s.done)
				s.items, s.err = read(s)
				<-w.sem
			}()
		}
	}
	launch()
	next := 0
	for k, s := range subs {
		for ; next <= s.after; next++ {
			if err := emit(own[next]); err != nil {
				return err
			}
		}
		launch()
		if k == ahead { // not started: its turn has come
			ahead++
			s.items, s.err = read(s)
			s.done = readNow
		}
		// While it is read in the background, read the next ones not
		// started yet in place rather than wait idle.
		for ahead < len(subs) && !closed(s.done) {
			t := subs[ahead]
			ahead++
			t.items, t.err = read(t)
			t.done = readNow
		}
		<-s.done
		if s.err != nil {
			return s.err
		}
		for _, it := range s.items {
			if err := emit(it); err != nil {
				return err
			}
		}
	}
	for ; next < len(own); next++ {
		if err := emit(own[next]); err != nil {
			return err
		}
	}
	return nil
}
