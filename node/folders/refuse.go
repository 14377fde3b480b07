package folders

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// ErrRefusedPath means a directory may not be shared: sharing it would give
// members the host (see systemDirs).
var ErrRefusedPath = errors.New("refused: sharing a system directory would give members the host")

// systemDirs may not be shared, nor anything inside them, nor any directory
// that contains one of them (which refuses "/" and "/var"). Reading them
// leaks the host's secrets; writing them (a job's read-write mount, a copy)
// runs code as root.
var systemDirs = []string{
	"/etc", "/usr", "/boot", "/proc", "/sys", "/dev", "/bin", "/sbin",
	"/lib", "/lib32", "/lib64", "/libx32", "/run", "/var/run", "/var/lib/docker",
	"/var/lib/containerd", "/var/log", "/var/spool", "/root", "/snap",
}

// darwinDirs are macOS's own (its /etc is /private/etc).
var darwinDirs = []string{"/System", "/Library", "/private/etc", "/private/var/root", "/private/var/db"}

// topDirs may not be shared themselves, nor any directory that contains
// them, but what is inside them may: "/" (everything), "/home" and "/Users"
// (every user's home, with their keys), and the home directory of the user
// running labpool (~/.ssh, ~/.bashrc, ...). `~/datasets` shares fine.
var topDirs = []string{"/", "/home", "/Users"}

// refusedPaths is what Config.DataDir and the defaults protect, resolved.
type refusedPaths struct {
	trees []string // refused with everything inside
	tops  []string // refused themselves only (and what contains them)
	data  []string // labpool's data directory, also in trees
}

func newRefusedPaths(dataDir string) refusedPaths {
	var rp refusedPaths
	trees := append([]string(nil), systemDirs...)
	if runtime.GOOS == "darwin" {
		trees = append(trees, darwinDirs...)
	}
	if dataDir != "" {
		trees = append(trees, dataDir)
		rp.data = appendResolved(nil, dataDir)
	}
	tops := append([]string(nil), topDirs...)
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		tops = append(tops, home)
	}
	for _, p := range trees {
		rp.trees = appendResolved(rp.trees, p)
	}
	for _, p := range tops {
		rp.tops = appendResolved(rp.tops, p)
	}
	return rp
}

// appendResolved appends p, and also where it leads when it is a link
// (/var/run is /run, /lib is /usr/lib on most systems).
func appendResolved(list []string, p string) []string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return list
	}
	list = append(list, filepath.Clean(abs))
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		list = append(list, real)
	}
	return list
}

// check resolves dir (symlinks included) and returns it, or an error
// wrapping ErrRefusedPath that names the directory and the rule.
func (rp refusedPaths) check(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", err
	}
	for _, p := range rp.trees {
		if inside(real, p) || inside(p, real) {
			return "", rp.refusal(dir, real, p)
		}
	}
	for _, p := range rp.tops {
		if inside(p, real) {
			return "", rp.refusal(dir, real, p)
		}
	}
	return real, nil
}

func (rp refusedPaths) refusal(dir, real, rule string) error {
	what := rule
	switch {
	case inside(real, rule) && real != rule:
		what = real + " is inside " + rule
	case real != rule:
		what = real + " holds " + rule
	}
	if dir != real {
		what = dir + " leads to " + what
	}
	if slices.Contains(rp.data, rule) {
		return refusedError(fmt.Sprintf("refused: sharing labpool's data directory (%s) would give members this machine's identity", what))
	}
	return refusedError(fmt.Sprintf("refused: sharing a system directory (%s) would give members the host", what))
}

// refusedError is an ErrRefusedPath that names the directory.
type refusedError string

func (e refusedError) Error() string      { return string(e) }
func (refusedError) Is(target error) bool { return target == ErrRefusedPath }

// inside reports whether p is dir or lies under it (both clean and absolute).
func inside(p, dir string) bool {
	if dir == string(filepath.Separator) {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}
