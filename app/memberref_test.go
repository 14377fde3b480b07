package app

import (
	"context"
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

// captureFolders records the share requests the service hands the daemon.
type captureFolders struct {
	stubDaemon
	got []ShareRequest
}

func (c *captureFolders) Share(_ context.Context, r ShareRequest) (Folder, error) {
	c.got = append(c.got, r)
	return Folder{Name: r.Name, Members: r.Members}, nil
}

// TestShareResolvesMembers: Share hands the daemon full device IDs for the
// names and short IDs given, names them back, and refuses an unknown name
// without sharing anything.
func TestShareResolvesMembers(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alice", false)
	self := Self{ID: selfID, Name: "zeta"}
	stub := stubDaemon{NewReader(db, self)}
	folders := &captureFolders{stubDaemon: stub}
	svc, err := New(Deps{DB: db, Self: self, Live: fakeLive{}, Pool: stub, Nodes: stub, Folders: folders, Copier: stub, Policy: stub})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f, err := svc.Share(ctx, ShareRequest{Name: "data", Path: "/srv/data", Members: []string{"alice", shortID(selfID)}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{alphaID, selfID}, folders.got[0].Members); diff != "" {
		t.Errorf("members handed to the daemon (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice", "zeta"}, f.MemberNames); diff != "" {
		t.Errorf("member names (-want +got):\n%s", diff)
	}
	if _, err := svc.Share(ctx, ShareRequest{Name: "data", Path: "/srv/data", Members: []string{"laptop"}}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "alice") {
		t.Errorf("share to an unknown member: %v", err)
	}
	if len(folders.got) != 1 {
		t.Errorf("a refused share reached the daemon: %+v", folders.got)
	}
}
