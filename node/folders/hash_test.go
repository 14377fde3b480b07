package folders

import (
	"crypto/rand"
	"crypto/sha256"
	"testing"
)

func TestAllZero(t *testing.T) {
	b := make([]byte, BlockSize)
	if !allZero(b) || !allZero(b[:7]) || !allZero(nil) {
		t.Fatal("zeros not seen as zeros")
	}
	b[BlockSize-1] = 1
	if allZero(b) {
		t.Fatal("a block ending in 1 seen as zeros")
	}
	if !allZero(b[:BlockSize-1]) {
		t.Fatal("its zero prefix not seen as zeros")
	}
}

func TestBlockSumDistinguishes(t *testing.T) {
	a := make([]byte, 4096)
	rand.Read(a)
	b := append([]byte(nil), a...)
	b[100] ^= 1
	if HexSum(a) == HexSum(b) || HexSum(a) != HexSum(append([]byte(nil), a...)) || len(HexSum(a)) != 2*SumSize {
		t.Fatal("block sums do not tell blocks apart")
	}
}

// BenchmarkBlockHash compares the block hash with SHA-256, and with the
// check of a fresh file's blocks (BlockCheck), on one block.
func BenchmarkBlockHash(b *testing.B) {
	buf := make([]byte, BlockSize)
	rand.Read(buf)
	b.Run("blake3", func(b *testing.B) {
		b.SetBytes(BlockSize)
		for b.Loop() {
			BlockSum(buf)
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(BlockSize)
		for b.Loop() {
			sha256.Sum256(buf)
		}
	})
	b.Run("crc32c", func(b *testing.B) {
		b.SetBytes(BlockSize)
		for b.Loop() {
			BlockCheck(buf)
		}
	})
}
