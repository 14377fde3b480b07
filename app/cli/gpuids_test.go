package cli

import (
	"slices"
	"strings"
	"testing"
)

func TestParseGPUIDs(t *testing.T) {
	const mig = "MIG-5c9f1a2e-6b1d-5b8e-9a3f-0000000000a1"
	tests := []struct {
		in      []string
		indexes []int
		mig     []string
		err     string
	}{
		{nil, nil, nil, ""},
		{[]string{"0", "3"}, []int{0, 3}, nil, ""},
		{[]string{mig}, nil, []string{mig}, ""},
		{[]string{"0", mig}, nil, nil, "not both"},
		{[]string{"GPU-12"}, nil, nil, `"GPU-12" is neither a GPU index`},
		{[]string{"-1"}, nil, nil, "neither"},
	}
	for _, tt := range tests {
		idx, m, err := parseGPUIDs(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseGPUIDs(%q) error %v; want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(idx, tt.indexes) || !slices.Equal(m, tt.mig) {
			t.Errorf("parseGPUIDs(%q) = %v, %v, %v; want %v, %v", tt.in, idx, m, err, tt.indexes, tt.mig)
		}
	}
}
