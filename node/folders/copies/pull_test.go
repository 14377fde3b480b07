package copies

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/labpool/labpool/node/folders"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func mustRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func write(t *testing.T, path string, data []byte, mode fs.FileMode, mtime time.Time) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
	os.Chtimes(path, mtime, mtime)
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// tree makes a source tree with the awkward cases.
func tree(t *testing.T) string {
	src := t.TempDir()
	mt := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	write(t, filepath.Join(src, "proj", "big.bin"), randBytes(5*folders.BlockSize+123), 0o640, mt)
	write(t, filepath.Join(src, "proj", "empty"), nil, 0o600, mt)
	write(t, filepath.Join(src, "proj", "with space & ünïcödé ☃.txt"), []byte("hello"), 0o644, mt)
	write(t, filepath.Join(src, "proj", "exec.sh"), []byte("#!/bin/sh\n"), 0o755, mt)
	sparse := filepath.Join(src, "proj", "sparse.img")
	f, _ := os.Create(sparse)
	f.WriteAt([]byte("end"), 8*folders.BlockSize)
	f.Close()
	os.Chtimes(sparse, mt, mt)
	os.Symlink("exec.sh", filepath.Join(src, "proj", "link"))
	return src
}

func pull(t *testing.T, src, dst, srcPath, dstPath string) Progress {
	t.Helper()
	p := &Pull{Src: RootSource{mustRoot(t, src)}, SrcPath: srcPath, SrcName: filepath.Base(srcPath), Dst: mustRoot(t, dst), DstPath: dstPath}
	got, err := p.Run(context.Background())
	if err != nil {
		t.Fatalf("pull %s -> %s: %v", srcPath, dstPath, err)
	}
	return got
}

func sameTree(t *testing.T, a, b string) {
	t.Helper()
	filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(a, p)
		q := filepath.Join(b, rel)
		ia, _ := os.Lstat(p)
		ib, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%s missing at the destination", rel)
			return nil
		}
		if ia.Mode() != ib.Mode() {
			t.Errorf("%s: mode %v, want %v", rel, ib.Mode(), ia.Mode())
		}
		if ia.Mode().IsRegular() {
			da, _ := os.ReadFile(p)
			db, _ := os.ReadFile(q)
			if !bytes.Equal(da, db) {
				t.Errorf("%s: content differs", rel)
			}
			if !ia.ModTime().Equal(ib.ModTime()) {
				t.Errorf("%s: mtime %v, want %v", rel, ib.ModTime(), ia.ModTime())
			}
		}
		return nil
	})
}

func TestPullTreeAndRecopy(t *testing.T) {
	src, dst := tree(t), t.TempDir()
	first := pull(t, src, dst, "proj", "")
	sameTree(t, filepath.Join(src, "proj"), filepath.Join(dst, "proj"))
	if first.Sent < 5*folders.BlockSize || first.Sent > 6*folders.BlockSize+folders.BlockSize { // the sparse file's holes are not sent
		t.Errorf("first copy sent %d bytes", first.Sent)
	}
	st, _ := os.Stat(filepath.Join(dst, "proj", "sparse.img"))
	if blocks := st.Sys(); blocks == nil {
		t.Log("no block count on this system")
	}
	again := pull(t, src, dst, "proj", "")
	if again.Sent != 0 || again.Done != again.Bytes {
		t.Errorf("re-copy of an unchanged tree sent %d bytes (done %d of %d)", again.Sent, again.Done, again.Bytes)
	}
	// Change one block in the middle: only it crosses.
	big := filepath.Join(src, "proj", "big.bin")
	f, _ := os.OpenFile(big, os.O_WRONLY, 0)
	f.WriteAt([]byte("changed!"), 2*folders.BlockSize+10)
	f.Close()
	delta := pull(t, src, dst, "proj", "")
	if delta.Sent != folders.BlockSize {
		t.Errorf("one changed block: sent %d bytes, want %d", delta.Sent, folders.BlockSize)
	}
	sameTree(t, filepath.Join(src, "proj"), filepath.Join(dst, "proj"))
}

func TestPullPathsLikeCpR(t *testing.T) {
	src := tree(t)
	dst := t.TempDir()
	os.Mkdir(filepath.Join(dst, "existing"), 0o755)
	os.Mkdir(filepath.Join(dst, "made"), 0o755)
	pull(t, src, dst, "proj", "existing")    // into an existing directory
	pull(t, src, dst, "proj", "newname")     // to a new path: becomes it
	pull(t, src, dst, "proj/empty", "made/") // trailing slash: into
	p := &Pull{Src: RootSource{mustRoot(t, src)}, SrcPath: "proj/empty", SrcName: "empty", Dst: mustRoot(t, dst), DstPath: "nodir/"}
	if _, err := p.Run(context.Background()); err == nil {
		t.Error("a copy into a missing directory with a trailing slash succeeded")
	}
	for _, p := range []string{"existing/proj/big.bin", "newname/big.bin", "made/empty"} {
		if _, err := os.Stat(filepath.Join(dst, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestPullResumes: a copy cut short resumes and sends only what is missing.
func TestPullResumes(t *testing.T) {
	src, dst := tree(t), t.TempDir()
	big := filepath.Join(src, "proj", "big.bin")
	data, _ := os.ReadFile(big)
	os.MkdirAll(filepath.Join(dst, "proj"), 0o755)
	// An earlier copy wrote 3 whole blocks and half of the fourth, then died.
	partial := filepath.Join(dst, "proj", folders.PartialPrefix+"big.bin")
	os.WriteFile(partial, data[:3*folders.BlockSize+folders.BlockSize/2], 0o600)
	got := pull(t, src, dst, "proj/big.bin", "proj/big.bin")
	if want := int64(len(data) - 3*folders.BlockSize); got.Sent != want {
		t.Errorf("resume sent %d bytes, want %d (the half block again and the rest)", got.Sent, want)
	}
	out, _ := os.ReadFile(filepath.Join(dst, "proj", "big.bin"))
	if !bytes.Equal(out, data) {
		t.Error("resumed file differs")
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Error("the partial file was left behind")
	}
}

// lyingSource changes a block under the receiver's feet; its blocks come
// with a BlockCheck when checked, else with a BlockSum (as from a source
// before the check).
type lyingSource struct {
	RootSource
	checked bool
}

func (l lyingSource) Read(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(make([]byte, n))), nil
}

// Blocks sends each block's true check with other bytes.
func (l lyingSource) Blocks(ctx context.Context, p string, first, n int) (io.ReadCloser, error) {
	var honest bytes.Buffer
	if err := folders.WriteBlocks(l.Root, p, first, n, l.checked, &honest); err != nil {
		return nil, err
	}
	b := honest.Bytes()
	head := 1 + folders.SumSize
	if l.checked {
		head = 1 + 4
	}
	for i := head; i < len(b); i++ {
		b[i] ^= 0xff // the bytes change, the checks do not
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func TestPullRefusesWrongBlocks(t *testing.T) {
	src, dst := tree(t), t.TempDir()
	for _, tt := range []struct {
		name            string
		checked, resume bool
	}{
		{"fresh", true, false},
		{"fresh, from a source with BlockSums", false, false},
		{"resumed", true, true},
	} {
		if tt.resume { // a partial file makes the receiver ask for block hashes first
			os.WriteFile(filepath.Join(dst, folders.PartialPrefix+"big.bin"), []byte("x"), 0o600)
		}
		p := &Pull{Src: lyingSource{RootSource{mustRoot(t, src)}, tt.checked}, SrcPath: "proj/big.bin", SrcName: "big.bin", Dst: mustRoot(t, dst), DstPath: "big.bin"}
		if _, err := p.Run(context.Background()); err == nil {
			t.Fatalf("%s: a copy with wrong blocks succeeded", tt.name)
		}
		if _, err := os.Stat(filepath.Join(dst, "big.bin")); !os.IsNotExist(err) {
			t.Errorf("%s: an unverified file appeared under its final name", tt.name)
		}
	}
}

// BenchmarkPullLocal measures a first copy of one file, source and
// destination on this machine (hashing, verifying and writing, no network).
func BenchmarkPullLocal(b *testing.B) {
	for _, size := range []int64{64 << 20, 2 << 30} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			src, dst := b.TempDir(), b.TempDir()
			f, err := os.Create(filepath.Join(src, "f"))
			if err != nil {
				b.Fatal(err)
			}
			chunk := randBytes(64 << 20)
			for off := int64(0); off < size; off += int64(len(chunk)) {
				f.Write(chunk)
			}
			f.Close()
			rs, _ := os.OpenRoot(src)
			rd, _ := os.OpenRoot(dst)
			b.SetBytes(size)
			for b.Loop() {
				os.Remove(filepath.Join(dst, "f"))
				p := &Pull{Src: RootSource{rs}, SrcPath: "f", SrcName: "f", Dst: rd, DstPath: "f"}
				if _, err := p.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// smallTree writes n small files, 100 to a directory, under dir/top.
func smallTree(b *testing.B, dir string, n int) {
	for i := range n {
		p := filepath.Join(dir, "top", fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, randBytes(512+i%3000), 0o644)
	}
}

// BenchmarkUnchangedTree measures the receiver's part of a re-copy of an
// unchanged tree of 20,000 small files: listing the source, and finding
// every file already in place.
func BenchmarkUnchangedTree(b *testing.B) {
	src, dst := b.TempDir(), b.TempDir()
	smallTree(b, src, 20000)
	rs, _ := os.OpenRoot(src)
	rd, _ := os.OpenRoot(dst)
	first := &Pull{Src: RootSource{rs}, SrcPath: "top", SrcName: "top", Dst: rd, DstPath: "."}
	if _, err := first.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, err := folders.Walk(rs, "top"); err != nil {
				b.Fatal(err)
			}
		}
	})
	items, _ := folders.Walk(rs, "top")
	// The listing's trip over the network: its text form against JSON.
	b.Run("listing-text", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			folders.EncodeWalk(&buf, items)
			if _, err := folders.DecodeWalk(&buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("listing-json", func(b *testing.B) {
		for b.Loop() {
			data, _ := json.Marshal(items)
			var back []folders.FileMeta
			if err := json.Unmarshal(data, &back); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pull", func(b *testing.B) {
		for b.Loop() {
			p := &Pull{Src: RootSource{rs}, SrcPath: "top", SrcName: "top", Dst: rd, DstPath: "."}
			got, err := p.Run(context.Background())
			if err != nil || got.Sent != 0 {
				b.Fatalf("re-copy sent %d bytes, %v", got.Sent, err)
			}
		}
	})
}

// BenchmarkFreshTree measures a first copy of 20,000 small files (source
// and destination on this machine, no network). Each copy goes to a new
// directory and none is removed before the end: on ext4 without a journal,
// files created just after many were removed cost far more (the inode
// allocator steps over the recently freed ones), which would swamp what is
// measured here.
func BenchmarkFreshTree(b *testing.B) {
	src := b.TempDir()
	smallTree(b, src, 20000)
	rs, _ := os.OpenRoot(src)
	for b.Loop() {
		b.StopTimer()
		rd, _ := os.OpenRoot(b.TempDir())
		b.StartTimer()
		p := &Pull{Src: RootSource{rs}, SrcPath: "top", SrcName: "top", Dst: rd, DstPath: "."}
		if _, err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rd.Close()
		b.StartTimer()
	}
}

// TestBadSourceName: the name a copy takes at the destination comes with
// the request, and only a plain name is taken.
func TestBadSourceName(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644)
	rs, _ := os.OpenRoot(src)
	rd, _ := os.OpenRoot(dst)
	bad := []string{"", ".", "..", "../up", "a/b", "nul\x00", strings.Repeat("n", 300)}
	if runtime.GOOS == "windows" {
		bad = append(bad, `a\b`, "c:")
	}
	for _, name := range bad {
		p := &Pull{Src: RootSource{rs}, SrcPath: "f", SrcName: name, Dst: rd, DstPath: "./"}
		if _, err := p.Run(context.Background()); !errors.Is(err, folders.ErrBadPath) {
			t.Errorf("copy named %q: %v", name, err)
		}
	}
	p := &Pull{Src: RootSource{rs}, SrcPath: "f", SrcName: "good name", Dst: rd, DstPath: "./"}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "good name")); err != nil || string(data) != "x" {
		t.Errorf("good name: %q %v", data, err)
	}
}
