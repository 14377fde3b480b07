package folders

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWalkCodecRoundTrip(t *testing.T) {
	mt := time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.UTC)
	items := []FileMeta{
		{Rel: "", Mode: 0o755, MTime: mt, Dir: true},
		{Rel: "plain.txt", Size: 12, Mode: 0o644, MTime: mt},
		{Rel: "with space & ünïcödé ☃.txt", Size: 5, Mode: 0o600, MTime: mt},
		{Rel: "tab\there", Size: 1, Mode: 0o600, MTime: mt},
		{Rel: "new\nline", Size: 1, Mode: 0o600, MTime: mt},
		{Rel: `"quoted"\back`, Size: 1, Mode: 0o600, MTime: mt},
		{Rel: "bad\xffutf8", Size: 1, Mode: 0o600, MTime: mt},
		{Rel: "link", Mode: 0o777, MTime: mt, Link: "../some where/else"},
		{Rel: "empty", Mode: 0o400, MTime: time.Unix(0, 0).UTC()},
		{Rel: "old", Size: 1 << 40, Mode: 0o644, MTime: time.Date(1970, 1, 1, 0, 0, 0, 5, time.UTC)},
	}
	var buf bytes.Buffer
	if err := EncodeWalk(&buf, items); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeWalk(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, items) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, items)
	}
}

func TestWalkCodecRejects(t *testing.T) {
	for _, in := range []string{
		"f\t1\t644\t0\tname",          // no newline: truncated
		"x\t1\t644\t0\tname\n",        // unknown kind
		"f\t-1\t644\t0\tname\n",       // negative size
		"f\t1\t7777\t0\tname\n",       // mode beyond permissions
		"f\t1\t644\tnow\tname\n",      // mtime not a number
		"f\t1\t644\t0\n",              // missing name
		"f\t1\t644\t0\tname\textra\n", // extra field
		"l\t0\t777\t0\tlink\n",        // link without target
		"l\t0\t777\t0\tlink\t\n",      // empty target
		"f\t1\t644\t0\t\"unterminated\n",
		"ff\t1\t644\t0\tname\n",
		strings.Repeat("x", 70000) + "\n",
	} {
		if _, err := DecodeWalk(strings.NewReader(in + "E\n")); err == nil {
			t.Errorf("DecodeWalk(%.40q) accepted", in)
		}
	}
	good := "d\t0\t755\t0\t\nf\t1\t644\t0\tname\n"
	for _, tc := range []struct{ in, want string }{
		{good, "cut short"}, // no end line
		{good + "E\tlstat x: permission denied\n", "unreadable reason"}, // an end line always quotes its reason
		{good + "E\t\"lstat x: permission denied\"\n", "permission denied"},
		{good + "E\nf\t1\t644\t0\tmore\n", "after its end"},
	} {
		if _, err := DecodeWalk(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeWalk(%q) = %v, want an error saying %q", tc.in, err, tc.want)
		}
	}
	if items, err := DecodeWalk(strings.NewReader(good + "E\n")); err != nil || len(items) != 2 {
		t.Errorf("a complete listing: %d items, %v", len(items), err)
	}
}

// TestWalkFuncStreams: the streamed walk lists what Walk lists, in order,
// and stops at the first error emit returns.
func TestWalkFuncStreams(t *testing.T) {
	dir := t.TempDir()
	for i := range 500 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%23), fmt.Sprintf("s%d", i%3), fmt.Sprintf("f%03d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte{byte(i)}, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "top.txt"), nil, 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	want, err := Walk(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	var got []FileMeta
	if err := WalkFunc(root, ".", func(m FileMeta) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WalkFunc listed %d items, Walk %d, or in another order", len(got), len(want))
	}
	stop := errors.New("enough")
	n := 0
	if err := WalkFunc(root, ".", func(FileMeta) error { n++; return map[bool]error{true: stop}[n == 100] }); err != stop || n != 100 {
		t.Fatalf("WalkFunc went on after emit failed: %d items, %v", n, err)
	}
	if err := WalkFunc(root, "missing", func(FileMeta) error { t.Fatal("emitted for a missing top"); return nil }); err == nil {
		t.Fatal("no error for a missing top")
	}
}

// FuzzDecodeWalk: a listing from the network never panics, and what
// decodes encodes back to the same items.
func FuzzDecodeWalk(f *testing.F) {
	f.Add("d\t0\t755\t0\t\nf\t12\t644\t1700000000000000000\ta/b.txt\nl\t0\t777\t5\tln\t\"../x\\ny\"\nE\n")
	f.Add("f\t1\t644\t0\t\"\\xff\"\nE\n")
	f.Add("f\t1\t644\t0\tx\nE\t\"no\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		items, err := DecodeWalk(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, it := range items {
			if it.Size < 0 || it.Mode&^fs.ModePerm != 0 || it.Dir && it.Link != "" {
				t.Fatalf("decoded an impossible item %+v", it)
			}
		}
		var buf bytes.Buffer
		EncodeWalk(&buf, items)
		again, err := DecodeWalk(&buf)
		if err != nil || !reflect.DeepEqual(again, items) {
			t.Fatalf("re-encoding changed %+v to %+v (%v)", items, again, err)
		}
	})
}

// TestWalkOrder: the parallel walk lists what fs.WalkDir lists, in its
// order (directories before their contents).
func TestWalkOrder(t *testing.T) {
	dir := t.TempDir()
	for i := range 300 {
		p := filepath.Join(dir, fmt.Sprintf("a%d", i%7), fmt.Sprintf("b%d", i%5), fmt.Sprintf("f%03d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte{byte(i)}, 0o644)
	}
	os.Symlink("a1", filepath.Join(dir, "ln"))
	os.MkdirAll(filepath.Join(dir, "empty", "deeper"), 0o700)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	got, err := Walk(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	fs.WalkDir(os.DirFS(dir), ".", func(name string, d fs.DirEntry, err error) error {
		if name == "." {
			name = ""
		}
		want = append(want, name)
		return err
	})
	var names []string
	for _, it := range got {
		names = append(names, it.Rel)
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("Walk listed %d items %v\nfs.WalkDir %d items %v", len(names), names, len(want), want)
	}
}
