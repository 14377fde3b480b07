package jobs

import "testing"

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"4096", 4096, false},
		{"512m", 512 << 20, false},
		{"32g", 32 << 30, false},
		{"32G", 32 << 30, false},
		{"20GiB", 20 << 30, false},
		{"1.5g", 3 << 29, false},
		{"8 GiB", 8 << 30, false},
		{"2GB", 2e9, false},
		{"1TiB", 1 << 40, false},
		{"", 0, true},
		{"g", 0, true},
		{"12x", 0, true},
		{"-1g", 0, true},
		{"1.2.3g", 0, true},
		{"99999999999T", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
