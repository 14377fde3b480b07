package folders

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/openstat"
)

// BlockSize is the unit of comparison and transfer of a file's content.
const BlockSize = 1 << 20

// FileMeta describes one item of a tree being copied, relative to the
// tree's top ("" for the top itself).
type FileMeta struct {
	Rel   string      `json:"rel"`
	Size  int64       `json:"size"`
	Mode  fs.FileMode `json:"mode"`
	MTime time.Time   `json:"mtime"`
	Dir   bool        `json:"dir,omitempty"`
	Link  string      `json:"link,omitempty"` // a symlink's target, copied as a link
}

// Small reports whether a file crosses whole in a bundle.
func (m FileMeta) Small() bool { return !m.Dir && m.Link == "" && m.Size <= BlockSize }

// Sums are a file's block hashes.
type Sums struct {
	Size   int64    `json:"size"`
	Blocks []string `json:"blocks"` // hex BlockSum of each BlockSize block
}

func meta(root *os.Root, name, rel string, fi fs.FileInfo) (FileMeta, error) {
	m := FileMeta{Rel: rel, Size: fi.Size(), Mode: fi.Mode().Perm(), MTime: fi.ModTime().UTC(), Dir: fi.IsDir()}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := root.Readlink(name)
		if err != nil {
			return m, err
		}
		m.Link, m.Size = target, 0
	} else if !fi.IsDir() && !fi.Mode().IsRegular() {
		return m, fmt.Errorf("%s is neither a file, a directory nor a link", name)
	}
	return m, nil
}

// FileSums hashes the blocks of the file p of root.
func FileSums(root *os.Root, p string) (Sums, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return Sums{}, err
	}
	f, err := root.Open(clean)
	if err != nil {
		return Sums{}, err
	}
	defer f.Close()
	return sumsOf(f)
}

// sumsOf hashes r block by block.
func sumsOf(r io.Reader) (Sums, error) {
	var s Sums
	buf := make([]byte, BlockSize)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			s.Blocks = append(s.Blocks, HexSum(buf[:n]))
			s.Size += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return s, nil
		}
		if err != nil {
			return s, err
		}
	}
}

// OpenRange opens n bytes at off of the file p of root.
func OpenRange(root *os.Root, p string, off, n int64) (io.ReadCloser, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("%w: negative range", ErrBadPath)
	}
	f, err := root.Open(clean)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

// ZeroSum is the hash of a block of zeros of length n (sparse regions);
// the full block's is computed once.
func ZeroSum(n int) string {
	if n == BlockSize {
		zeroBlockOnce.Do(func() { zeroBlockSum = hashZeros(BlockSize) })
		return zeroBlockSum
	}
	return hashZeros(n)
}

var (
	zeroBlockOnce sync.Once
	zeroBlockSum  string
)

func hashZeros(n int) string {
	return HexSum(zeros[:n])
}

// join is path.Join for a tree's relative names, "" meaning the top.
func join(dir, rel string) string {
	if rel == "" {
		return dir
	}
	return path.Join(dir, rel)
}

// BundleItem heads one file of a bundle: its bytes follow the header line.
type BundleItem struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	Sum   string `json:"sum"`             // BlockSum of the bytes that follow
	Error string `json:"error,omitempty"` // the file could not be read: no bytes follow
}

// maxBundle bounds what one bundle request may ask for.
const maxBundle = 1024

// WriteBundle writes the small files paths of root to w, each as a JSON
// header line and its bytes, so that many small files cross in one request.
func WriteBundle(root *os.Root, paths []string, w io.Writer) error {
	return writeBundle(root, paths, CleanPath, w)
}

// writeBundle is WriteBundle reading each path p at place(p) in root; the
// headers carry p as asked.
func writeBundle(root *os.Root, paths []string, place func(string) (string, error), w io.Writer) error {
	if len(paths) > maxBundle {
		return fmt.Errorf("%w: %d files in one bundle, at most %d", ErrBadPath, len(paths), maxBundle)
	}
	bw := bufio.NewWriterSize(w, 256<<10) // many small files: few large writes
	enc := json.NewEncoder(bw)
	dirs := NewDirRoots(root)
	defer dirs.Close()
	for _, p := range paths {
		item := BundleItem{Path: p}
		name, err := place(p)
		var data []byte
		if err == nil {
			data, err = readSmall(dirs, name)
		}
		if err != nil {
			item.Error = err.Error()
		} else {
			item.Size, item.Sum = int64(len(data)), HexSum(data)
		}
		if err := enc.Encode(item); err != nil {
			return err
		}
		if _, err := bw.Write(data); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readSmall reads the small file p through dirs.
func readSmall(dirs *DirRoots, p string) ([]byte, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	return dirs.read(clean)
}

// ReadBundle reads a bundle, calling fn with each header and its bytes
// (network input: sizes are bounded).
func ReadBundle(r io.Reader, fn func(BundleItem, []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read bundle: %w", err)
		}
		var item BundleItem
		if err := json.Unmarshal(line, &item); err != nil || item.Size < 0 || item.Size > BlockSize {
			return fmt.Errorf("read bundle: bad header")
		}
		data := make([]byte, item.Size)
		if _, err := io.ReadFull(br, data); err != nil {
			return fmt.Errorf("read bundle: %w", err)
		}
		if err := fn(item, data); err != nil {
			return err
		}
	}
}

// Kinds of block in a WriteBlocks stream.
const (
	BlockData    = 0 // the block's BlockSum and bytes follow
	BlockZero    = 1 // the block is all zeros: nothing follows
	BlockChecked = 2 // the block's BlockCheck (4 bytes, big-endian) and bytes follow
)

// BlockCheck is the CRC-32C of a block that crosses to a receiver that
// has none of its file (see WriteBlocks).
func BlockCheck(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteBlocks writes n blocks of the file p of root from block first: each
// as a kind byte, then for data its BlockSum and bytes, or with checked
// its BlockCheck and bytes. The blocks go to a receiver that has nothing
// of the file yet, so nothing is compared with a block's hash: it only
// checks the block on arrival, which the CRC-32C does at a fiftieth of
// the cost (on two cores, BLAKE3 was a fifth of each agent's time in a
// large copy; TLS authenticates every byte in between). Receivers before
// the check asked without it and are sent BlockSums.
func WriteBlocks(root *os.Root, p string, first, n int, checked bool, w io.Writer) error {
	clean, err := CleanPath(p)
	if err != nil {
		return err
	}
	if first < 0 || n < 0 || n > 1<<16 {
		return fmt.Errorf("%w: bad block range", ErrBadPath)
	}
	f, fi, err := openstat.Open(root.Open, clean)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, BlockSize)
	for i := first; i < first+n; i++ {
		off := int64(i) * BlockSize
		if off >= fi.Size() {
			return fmt.Errorf("block %d is past the end of %s", i, p)
		}
		k := int(min(int64(BlockSize), fi.Size()-off))
		if _, err := f.ReadAt(buf[:k], off); err != nil && err != io.EOF {
			return err
		}
		var head []byte
		switch {
		case allZero(buf[:k]):
			head = []byte{BlockZero}
		case checked:
			head = binary.BigEndian.AppendUint32([]byte{BlockChecked}, BlockCheck(buf[:k]))
		default:
			sum := BlockSum(buf[:k])
			head = append([]byte{BlockData}, sum[:]...)
		}
		if _, err := w.Write(head); err != nil {
			return err
		}
		if head[0] == BlockZero {
			continue
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
	}
	return nil
}
