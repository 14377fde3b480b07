package folders

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteBlocksChecks: a data block comes with its BlockCheck when the
// receiver asks for it, with its BlockSum otherwise (a receiver before the
// check), and a block of zeros with neither.
func TestWriteBlocksChecks(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 2*BlockSize+10) // a block of data, one of zeros, a short one
	for i := range BlockSize {
		data[i] = byte(i*7 + 1)
	}
	copy(data[2*BlockSize:], "0123456789")
	os.WriteFile(filepath.Join(dir, "f"), data, 0o644)
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	blocks := [][]byte{data[:BlockSize], data[BlockSize : 2*BlockSize], data[2*BlockSize:]}
	for _, checked := range []bool{true, false} {
		var out bytes.Buffer
		if err := WriteBlocks(root, "f", 0, 3, checked, &out); err != nil {
			t.Fatal(err)
		}
		var want []byte
		for _, b := range blocks {
			switch {
			case allZero(b):
				want = append(want, BlockZero)
				continue
			case checked:
				want = binary.BigEndian.AppendUint32(append(want, BlockChecked), BlockCheck(b))
			default:
				sum := BlockSum(b)
				want = append(append(want, BlockData), sum[:]...)
			}
			want = append(want, b...)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("checked %v: the stream differs (%d bytes, want %d)", checked, out.Len(), len(want))
		}
	}
}
