package copies

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/labpool/labpool/node/folders"
)

// A directory copied where nothing stands under its name yet is written
// under the partial name of that directory (folders.PartialName) and
// renamed into place once every file in it is complete. No name inside it
// is final until then, so its small files are written straight under
// their own names (folders.DirRoots.PutNew): a rename a file saved, and on
// a tree of many small files that rename was a third of the receiver's
// system time. An interrupted copy leaves the staged tree for the next one
// to go on from, as it leaves a partial file.

// stage returns where the copy of the source's tree, whose top is top, is
// written: target itself, or, for a directory that does not exist at the
// destination, its staging directory, made or found left by an
// interrupted copy (then p.have is what that one wrote).
func (p *Pull) stage(target string, top folders.FileMeta) (string, error) {
	if !top.Dir || top.Rel != "" {
		return target, nil // a file: its partial file stands in
	}
	if _, err := p.Dst.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		return target, nil // there already (or unreadable, which the copy will say)
	}
	stage := folders.PartialName(target)
	fi, err := p.Dst.Lstat(stage)
	switch {
	case err == nil && fi.IsDir():
		p.have, p.staged = p.index(stage), true
		return stage, nil
	case err == nil:
		// Not a directory: nothing a copy leaves. It is removed, not
		// followed (a link's target stays as it is).
		if err := p.Dst.Remove(stage); err != nil {
			return "", fmt.Errorf("clear %s: %w", stage, err)
		}
	}
	// Private until it is complete; its mode is set with the others'.
	if err := p.Dst.Mkdir(stage, 0o700); err != nil {
		return "", folders.WriteError(stage, err)
	}
	p.changed.Store(true)
	p.staged = true
	return stage, nil
}

// unstage puts a complete staged tree in place under target.
func (p *Pull) unstage(stage, target string) error {
	if stage == target {
		return nil
	}
	if err := p.Dst.Rename(stage, target); err != nil {
		return fmt.Errorf("put %s in place: %w", target, err)
	}
	return nil
}
