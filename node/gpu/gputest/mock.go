//go:build linux && cgo

package gputest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mock is NVIDIA's mock libnvidia-ml.so (a test fixture of the project, see
// ../shared/mocknvml/README.md): a real shared library that go-nvml loads
// with dlopen, answering from a YAML profile.
type Mock struct {
	Dir string // the directory holding it, with profiles/
	Lib string // the shared object itself (an ELF file, links resolved)
}

// FindMock locates the mock library: $LABPOOL_TEST_NVML, or else
// ../shared/mocknvml beside the module root (found by walking up from the
// working directory to go.mod). Its error says where it looked, for a test
// to skip with.
func FindMock() (Mock, error) {
	dir := os.Getenv("LABPOOL_TEST_NVML")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return Mock{}, err
		}
		dir = filepath.Join(root, "..", "shared", "mocknvml")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Mock{}, err
	}
	lib, err := resolve(dir, "libnvidia-ml.so.1")
	if err != nil {
		return Mock{}, fmt.Errorf("mock NVML library not found (set LABPOOL_TEST_NVML=dir or put it at ../shared/mocknvml): %w", err)
	}
	return Mock{Dir: dir, Lib: lib}, nil
}

// Profile is the path of one of the mock's profiles, e.g. "h100.yaml".
func (m Mock) Profile(name string) string { return filepath.Join(m.Dir, "profiles", name) }

// LinkDir makes dir a directory to put in LD_LIBRARY_PATH: it holds
// libnvidia-ml.so.1, a symbolic link to m.Lib. (The fixture's own
// libnvidia-ml.so.1 may be a text file naming its target where the copy
// did not keep symbolic links, which dlopen cannot load.)
func (m Mock) LinkDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	link := filepath.Join(dir, "libnvidia-ml.so.1")
	os.Remove(link)
	return os.Symlink(m.Lib, link)
}

// resolve follows name in dir to an ELF file, through symbolic links or
// small text files holding the name of their target.
func resolve(dir, name string) (string, error) {
	for range 8 {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		if bytes.HasPrefix(b, []byte("\x7fELF")) {
			return filepath.EvalSymlinks(p)
		}
		next := strings.TrimSpace(string(b))
		if len(b) > 256 || next == "" || strings.ContainsAny(next, "/\n\x00") {
			return "", fmt.Errorf("%s is neither a shared library nor the name of one", p)
		}
		name = next
	}
	return "", fmt.Errorf("%s: too many links", filepath.Join(dir, name))
}

// moduleRoot walks up from the working directory to the one holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
