package containers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
)

// maxBook bounds the images the book remembers a loader of; past it, the
// oldest entries go first (an engine rarely holds this many images).
const maxBook = 4096

// book records who loaded each image through the agent, by image ID: the
// device ID of the caller of a load that brought the image to the engine.
// It lives beside the engine (an image carries no label a load could set
// without being trusted), in a file of the agent's when one is named, and
// forgets an image the engine no longer has.
type book struct {
	path string // "" = memory only

	mu    sync.Mutex        // guards by, order
	by    map[string]string // image ID -> loader's device ID
	order []string          // the image IDs, oldest first
}

type bookFile struct {
	Images []bookEntry `json:"images"`
}

type bookEntry struct {
	ID string `json:"id"`
	By string `json:"by"`
}

// openBook reads the book at path. One that cannot be read starts empty
// (the loaders of images loaded before are then unknown, never made up),
// and the error says why; a missing file is no error.
func openBook(path string) (*book, error) {
	b := &book{path: path, by: map[string]string{}}
	if path == "" {
		return b, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	} else if err != nil {
		return b, fmt.Errorf("read image loaders: %w", err)
	}
	var f bookFile
	if err := json.Unmarshal(data, &f); err != nil {
		return b, fmt.Errorf("read image loaders %s: %w", path, err)
	}
	for _, e := range f.Images {
		if e.ID != "" && e.By != "" && b.by[e.ID] == "" {
			b.by[e.ID], b.order = e.By, append(b.order, e.ID)
		}
	}
	return b, nil
}

// loader is who loaded image id ("" when unknown or not through the agent).
func (b *book) loader(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.by[id]
}

// set records who loaded image id; the error is the save's (the record in
// memory holds it either way).
func (b *book) set(id, by string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.by[id]; !ok {
		b.order = append(b.order, id)
	}
	b.by[id] = by
	for len(b.order) > maxBook {
		delete(b.by, b.order[0])
		b.order = b.order[1:]
	}
	return b.saveLocked()
}

// keep forgets every image the engine no longer has; the error is the
// save's.
func (b *book) keep(has map[string]bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	before := len(b.order)
	kept := b.order[:0]
	for _, id := range b.order {
		if has[id] {
			kept = append(kept, id)
		} else {
			delete(b.by, id)
		}
	}
	b.order = kept
	if len(kept) != before {
		return b.saveLocked()
	}
	return nil
}

// snapshot is the book as a map.
func (b *book) snapshot() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.by)
}

// saveLocked writes the book whole, through a new file renamed over the
// old one. A write that fails leaves the previous book, and says so; the
// record in memory stays right for this run.
func (b *book) saveLocked() error {
	if b.path == "" {
		return nil
	}
	f := bookFile{Images: make([]bookEntry, 0, len(b.order))}
	for _, id := range b.order {
		f.Images = append(f.Images, bookEntry{ID: id, By: b.by[id]})
	}
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("save image loaders: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.path), ".images-*.json")
	if err != nil {
		return fmt.Errorf("save image loaders: %w", err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), b.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save image loaders to %s: %w", b.path, err)
	}
	return nil
}
