package history_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history/histtest"
	"github.com/labpool/labpool/sync/store"
)

// deviceID is as long as a real device ID (63 characters).
const deviceID = "ABCDEFG-HIJKLMN-OPQRSTU-VWXYZ23-4567ABC-DEFGHIJ-KLMNOPQ-RSTUVWX"

// BenchmarkMachineYear writes a machine-year of history of 8 GPUs (every
// tier at its retention: 1 h of 1 s, 7 d of 1 min, a year of 15 min and
// 3 h, and the live sample) into a fresh replica and reports the size of
// its file, in this version's format and in the previous version's JSON
// means (1 s, 1 min, 15 min). Run with -benchtime 1x.
func BenchmarkMachineYear(b *testing.B) {
	for _, f := range []struct {
		name string
		f    histtest.Format
	}{{"compact", histtest.Compact}, {"json", histtest.JSON}} {
		b.Run(f.name, func(b *testing.B) {
			var size int64
			for b.Loop() {
				size = writeYear(b, f.f)
			}
			b.ReportMetric(float64(size)/1e6, "MB/machine-year")
		})
	}
}

func writeYear(b *testing.B, f histtest.Format) int64 {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "replica.db")
	db, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	n := histtest.Node{ID: deviceID, GPUs: 8, Span: 365 * 24 * time.Hour, End: time.Now()}
	if err := histtest.Write(ctx, db, f, n); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	return size
}
