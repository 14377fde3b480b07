// Package folders shares directories of this machine with the pool. Every
// file operation on a share goes through os.Root, so no path a member
// sends — "..", absolute, a symlink pointing out, a swap during a write —
// reads or writes outside the shared directory.
package folders

import (
	"errors"
	"fmt"
	"path"
	"runtime"
	"strings"
	"unicode/utf8"
)

// ErrBadPath means a path sent by a member is not a clean relative path.
var ErrBadPath = errors.New("invalid path in a shared folder")

// Limits on paths inside a share.
const (
	maxPath = 4096
	maxName = 255
)

// windowsPaths is true where a backslash separates a path and a colon
// names a drive or a stream. Elsewhere both are ordinary characters of a
// name: a file called `a\b` or `1:2.txt` copies like any other, and only a
// receiver on Windows refuses it.
var windowsPaths = runtime.GOOS == "windows"

// CleanPath checks a slash-separated path inside a share and returns it
// cleaned, "." for the share's top. It refuses NUL bytes, absolute paths,
// ".." anywhere, invalid UTF-8 and over-long names, and on Windows
// backslashes and colons, instead of repairing them.
func CleanPath(p string) (string, error) {
	if p == "" || p == "." || p == "/" {
		return ".", nil
	}
	switch {
	case len(p) > maxPath:
		return "", fmt.Errorf("%w: longer than %d bytes", ErrBadPath, maxPath)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: contains a NUL byte", ErrBadPath)
	case !utf8.ValidString(p):
		return "", fmt.Errorf("%w: not UTF-8", ErrBadPath)
	case strings.HasPrefix(p, "/"), windowsPaths && (strings.HasPrefix(p, `\`) || len(p) > 1 && p[1] == ':'):
		return "", fmt.Errorf("%w: %q is absolute", ErrBadPath, p)
	}
	for _, part := range strings.Split(p, "/") {
		switch {
		case part == "..":
			return "", fmt.Errorf("%w: %q leaves the folder", ErrBadPath, p)
		case len(part) > maxName:
			return "", fmt.Errorf("%w: a name is longer than %d bytes", ErrBadPath, maxName)
		case windowsPaths && strings.ContainsAny(part, `\:`):
			return "", fmt.Errorf("%w: %q has a backslash or a colon, which Windows does not allow in a name", ErrBadPath, p)
		}
	}
	return path.Clean(p), nil
}

// ValidName reports whether s can name a share: 1 to 64 letters, digits,
// '.', '_' or '-', not starting with '.'.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
