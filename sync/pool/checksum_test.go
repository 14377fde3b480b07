package pool

import "testing"

func TestChecksumIsCRC16CCITT(t *testing.T) {
	if got := checksum([]byte("123456789")); got[0] != 0x29 || got[1] != 0xb1 {
		t.Errorf("checksum(123456789) = %x; want 29b1", got)
	}
}
