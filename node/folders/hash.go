package folders

import (
	"bytes"
	"encoding/hex"

	"github.com/zeebo/blake3"
)

// Block hashes are BLAKE3-256: as strong as SHA-256 for telling blocks
// apart and checking what arrived, and about nine times faster on CPUs
// without SHA extensions (see BenchmarkBlockHash), where SHA-256 alone
// would cap a copy near 350 MB/s.
const SumSize = 32

// BlockSum hashes one block (or one small file of a bundle).
func BlockSum(b []byte) [SumSize]byte { return blake3.Sum256(b) }

// HexSum is BlockSum in hex, as Sums and bundle headers carry it.
func HexSum(b []byte) string {
	s := BlockSum(b)
	return hex.EncodeToString(s[:])
}

// zeros is a block of zeros to compare with.
var zeros = make([]byte, BlockSize)

// allZero reports whether b (at most BlockSize bytes) holds only zeros.
func allZero(b []byte) bool { return bytes.Equal(b, zeros[:len(b)]) }
