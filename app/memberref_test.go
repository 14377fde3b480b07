package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveMembers(t *testing.T) {
	const (
		laptop = "AAAA-BBBB-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
		lab1   = "AAAA-BZZZ-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
		lab2   = "QQQQ-RRRR-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
		gone   = "ZZZZ-RRRR-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
	)
	members := []Member{
		{ID: laptop, Name: "laptop"}, {ID: lab1, Name: "lab"}, {ID: lab2, Name: "Lab"},
		{ID: gone, Name: "old", Removed: true},
	}
	tests := []struct {
		name    string
		refs    []string
		want    []string
		wantErr error
		says    []string // what the error names
	}{
		{"by name", []string{"laptop"}, []string{laptop}, nil, nil},
		{"exact name before another case", []string{"Lab", "lab"}, []string{lab2, lab1}, nil, nil},
		{"name in another case", []string{"LAPTOP"}, []string{laptop}, nil, nil},
		{"full ID", []string{lab2}, []string{lab2}, nil, nil},
		{"full ID lower case, no dashes", []string{strings.ToLower(strings.ReplaceAll(laptop, "-", ""))}, []string{laptop}, nil, nil},
		{"short ID", []string{"QQQQ-RRRR"}, []string{lab2}, nil, nil},
		{"repeats once", []string{"laptop", "AAAA-BBBB", laptop}, []string{laptop}, nil, nil},
		{"ambiguous prefix names the candidates", []string{"AAAA"}, nil, ErrInvalid, []string{"ambiguous", "laptop (AAAA-BBBB)", "lab (AAAA-BZZZ)"}},
		{"unknown names the members", []string{"desk"}, nil, ErrNotFound, []string{`no member "desk"`, "laptop (AAAA-BBBB)", "Lab (QQQQ-RRRR)"}},
		{"a removed member is unknown", []string{"old"}, nil, ErrNotFound, []string{`no member "old"`}},
		{"only blanks", []string{" ", ""}, nil, ErrInvalid, []string{"no member named"}},
		{"too short a prefix", []string{"QQQ"}, nil, ErrNotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveMembers(members, tt.refs)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ResolveMembers(%q) error %v, want %v", tt.refs, err, tt.wantErr)
			}
			if err != nil {
				for _, s := range tt.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				if strings.Contains(err.Error(), "old (") {
					t.Errorf("error %q names a removed member", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ResolveMembers(%q) (-want +got):\n%s", tt.refs, diff)
			}
		})
	}
}
