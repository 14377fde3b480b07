package folders

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"syscall"
)

// PartialPrefix begins the name under which a copied file grows until it
// is complete (see PartialName).
const PartialPrefix = ".labpool-partial."

// PartialName is where the file name grows until it is complete: in its
// directory, under PartialPrefix and its base name (hashed when that would
// be too long a name).
func PartialName(name string) string {
	dir, base := path.Split(name)
	if len(base)+len(PartialPrefix) > maxName {
		sum := sha256.Sum256([]byte(base))
		base = hex.EncodeToString(sum[:12])
	}
	return path.Join(dir, PartialPrefix+base)
}

// ErrFull means the destination's file system has no space left.
var ErrFull = errors.New("the destination is full")

// WriteError explains a failed write of name; a full disk says so plainly
// (ErrFull). What was written stays under the partial name, for a later
// copy to resume once space is freed; nothing appears under the final name.
func WriteError(name string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: no space left to write %s (free some space and copy again: it resumes)", ErrFull, name)
	}
	return fmt.Errorf("write %s: %w", name, err)
}
