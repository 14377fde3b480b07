package containers

import (
	"encoding/json"
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

// openBook reads the book at path; one that cannot be read starts empty
// (the loaders of images loaded before are then unknown, never made up).
func openBook(path string) *book {
	b := &book{path: path, by: map[string]string{}}
	if path == "" {
		return b
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return b
	}
	var f bookFile
	if json.Unmarshal(data, &f) != nil {
		return b
	}
	for _, e := range f.Images {
		if e.ID != "" && e.By != "" && b.by[e.ID] == "" {
			b.by[e.ID], b.order = e.By, append(b.order, e.ID)
		}
	}
	return b
}

// loader is who loaded image id ("" when unknown or not through the agent).
func (b *book) loader(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.by[id]
}

// set records who loaded image id.
func (b *book) set(id, by string) {
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
	b.saveLocked()
}

// keep forgets every image the engine no longer has.
func (b *book) keep(has map[string]bool) {
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
		b.saveLocked()
	}
}

// snapshot is the book as a map.
func (b *book) snapshot() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.by)
}

// saveLocked writes the book whole, through a new file renamed over the
// old one. A write that fails leaves the previous book; the record in
// memory stays right for this run.
func (b *book) saveLocked() {
	if b.path == "" {
		return
	}
	f := bookFile{Images: make([]bookEntry, 0, len(b.order))}
	for _, id := range b.order {
		f.Images = append(f.Images, bookEntry{ID: id, By: b.by[id]})
	}
	data, err := json.Marshal(f)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.path), ".images-*.json")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), b.path) != nil {
		os.Remove(tmp.Name())
	}
}
