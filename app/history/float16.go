package history

import "math"

// IEEE 754 half precision, for the figures of a tier record that need no
// more than 11 significant bits.

// maxF16 is the largest finite float16; larger values are stored as it.
const maxF16 = 65504

// toF16 rounds f to the nearest float16 (ties to even), saturating at
// ±maxF16; NaN stays NaN.
func toF16(f float32) uint16 {
	if f != f {
		return 0x7e00
	}
	f = max(-maxF16, min(maxF16, f))
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 0x1f:
		return sign | 0x7bff
	case exp <= 0:
		if exp < -10 {
			return sign // too small: zero
		}
		mant |= 0x800000 // the implicit bit, then shift into a subnormal
		shift := uint32(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is right
	}
	if h >= 0x7c00 {
		h = 0x7bff
	}
	return sign | uint16(h)
}

// fromF16 is the float32 of the float16 h.
func fromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h >> 10 & 0x1f)
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13) // inf or NaN
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(mant) / (1 << 24) // a subnormal: mant x 2^-24
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}
