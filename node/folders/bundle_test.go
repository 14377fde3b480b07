package folders

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func FuzzReadBundle(f *testing.F) {
	var good bytes.Buffer
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("hello"), 0o644)
	r, _ := os.OpenRoot(dir)
	WriteBundle(r, []string{"a", "missing"}, &good)
	r.Close()
	f.Add(good.Bytes())
	f.Add([]byte("{\"path\":\"x\",\"size\":99999999999}\n"))
	f.Add([]byte("not json\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ReadBundle(bytes.NewReader(data), func(item BundleItem, b []byte) error {
			if int64(len(b)) != item.Size || item.Size > BlockSize {
				t.Fatalf("item %+v with %d bytes", item, len(b))
			}
			return nil
		})
	})
}
