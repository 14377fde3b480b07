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
	clean, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	top, err := root.Lstat(clean)
	if err != nil {
		return nil, err
	}
	m, err := meta(root, clean, "", top)
	if err != nil || !top.IsDir() {
		return []FileMeta{m}, err
	}
	d, err := openTop(root, clean)
	if err != nil {
		return nil, err
	}
	w := walker{sem: make(chan struct{}, max(4, runtime.GOMAXPROCS(0)))}
	rest, err := w.dir(d, "")
	return append([]FileMeta{m}, rest...), err
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
