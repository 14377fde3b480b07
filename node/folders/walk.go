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
	return newWalker().stream(d, emit)
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
	own, err := d.list()
	if err != nil {
		d.close()
		return nil, err
	}
	var subs []*subtree
	var firstErr error
	for i := range own {
		name := own[i].Rel
		own[i].Rel = join(rel, name)
		if !own[i].Dir || firstErr != nil {
			continue
		}
		s := &subtree{after: i}
		subs = append(subs, s)
		sd, err := d.sub(name) // opened now: d is closed before the subtree is read
		if err != nil {
			firstErr = err
			continue
		}
		select {
		case w.sem <- struct{}{}:
			s.done = make(chan struct{})
			go func(rel string) {
				defer close(s.done)
				s.items, s.err = w.dir(sd, rel)
				<-w.sem
			}(own[i].Rel)
		default:
			s.items, s.err = w.dir(sd, own[i].Rel)
		}
	}
	d.close()
	if len(subs) == 0 {
		return own, firstErr
	}
	out := make([]FileMeta, 0, len(own))
	next := 0
	for _, s := range subs {
		if s.done != nil {
			<-s.done
		}
		if firstErr == nil {
			firstErr = s.err
		}
		out = append(out, own[next:s.after+1]...)
		out = append(out, s.items...)
		next = s.after + 1
	}
	return append(out, own[next:]...), firstErr
}

// stream lists the tree under the top directory d in order, emitting each
// item once everything before it is known: the top's own entries at once,
// each subtree as soon as it has been read (in the background where the
// walker has room, else in place when its turn comes). It closes d.
func (w *walker) stream(d dirReader, emit func(FileMeta) error) error {
	defer d.close()
	own, err := d.list()
	if err != nil {
		return err
	}
	var subs []*subtree
	for i := range own {
		if !own[i].Dir {
			continue
		}
		s := &subtree{after: i}
		subs = append(subs, s)
		select {
		case w.sem <- struct{}{}:
			sd, err := d.sub(own[i].Rel)
			if err != nil {
				<-w.sem
				s.err = err
				continue
			}
			s.done = make(chan struct{})
			go func(rel string) {
				defer close(s.done)
				s.items, s.err = w.dir(sd, rel)
				<-w.sem
			}(own[i].Rel)
		default: // read in place when its turn comes
		}
	}
	next := 0
	for _, s := range subs {
		for ; next <= s.after; next++ {
			if err := emit(own[next]); err != nil {
				return err
			}
		}
		switch {
		case s.done != nil:
			<-s.done
		case s.err == nil:
			var sd dirReader
			if sd, s.err = d.sub(own[s.after].Rel); s.err == nil {
				s.items, s.err = w.dir(sd, own[s.after].Rel)
			}
		}
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
