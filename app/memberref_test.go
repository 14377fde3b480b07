package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/sync/store"
)

func TestResolveMembers(t *testing.T) {
	const (
		laptop = "AAAA-BBBB-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
		lab1   = "AAAA-BZZZ-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
		lab2   = "QQQQ-RRRR-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
		gone   = "ZZZZ-RRRR-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM"
		dgx    = "DDDD-XXXX-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM" // alice's first device
		alap   = "DDDD-LLLL-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM" // alice's laptop
		aold   = "DDDD-OOOO-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH-IIII-JJJJ-KKKK-LLLL-MMMM" // alice's, removed
	)
	members := []store.MemberRow{
		{ID: laptop, Name: "laptop"}, {ID: lab1, Name: "lab"}, {ID: lab2, Name: "Lab"},
		{ID: gone, Name: "old", Removed: true},
		{ID: dgx, Name: "dgx", Person: dgx, PersonName: "alice"},
		{ID: alap, Name: "alice-laptop", Person: dgx, PersonName: "alice"},
		{ID: aold, Name: "alice-old", Person: dgx, PersonName: "alice", Removed: true},
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
		{"a person by name", []string{"alice"}, []string{dgx}, nil, nil},
		{"a person in another case", []string{"Alice"}, []string{dgx}, nil, nil},
		{"a device names its person", []string{"alice-laptop"}, []string{dgx}, nil, nil},
		{"a device ID names its person", []string{"DDDD-LLLL"}, []string{dgx}, nil, nil},
		{"a person once, named by each device", []string{"dgx", "alice", "alice-laptop"}, []string{dgx}, nil, nil},
		{"a removed device of a person is unknown", []string{"alice-old"}, nil, ErrNotFound, []string{`no member "alice-old"`}},
		{"ambiguous prefix names the candidates", []string{"AAAA"}, nil, ErrInvalid, []string{"ambiguous", "laptop (AAAA-BBBB)", "lab (AAAA-BZZZ)"}},
		{"unknown names the members", []string{"desk"}, nil, ErrNotFound, []string{`no member "desk"`, "laptop (AAAA-BBBB)", "Lab (QQQQ-RRRR)", "alice: alice-laptop (DDDD-LLLL)"}},
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

// TestNamesByPerson: every device is named by its person; a person is
// marked removed once no device of theirs is left, not while one is; a
// folder's list names a person by name and a device listed alone (before
// people) by its person and the device; a device the pool never admitted
// by its short ID.
func TestNamesByPerson(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	version := uint64(0)
	put := func(id, name, person, pname string, removed bool) {
		t.Helper()
		version++
		m := store.MemberRow{ID: id, Name: name, Version: version, Removed: removed, AddedAt: t0, AddedBy: selfID, Person: person, PersonName: pname}
		if _, err := db.PutMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	_, dgx := memberKey(11)
	_, alap := memberKey(12)
	_, blap := memberKey(13)
	_, bws := memberKey(14)
	_, stranger := memberKey(15)
	put(dgx, "dgx", dgx, "alice", true) // alice's first device, removed: alice stays
	put(alap, "alice-laptop", dgx, "alice", false)
	put(blap, "bob-laptop", blap, "bob", true) // bob left with both devices
	put(bws, "bob-ws", blap, "bob", true)
	names, err := memberNames(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{dgx: "alice", alap: "alice", blap: "bob" + RemovedMark, bws: "bob" + RemovedMark}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("memberNames (-want +got):\n%s", diff)
	}
	ms, err := db.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := MemberNames(ms, []string{dgx, alap, blap, stranger})
	if diff := cmp.Diff([]string{"alice", "alice (alice-laptop)", "bob" + RemovedMark, shortID(stranger)}, got); diff != "" {
		t.Errorf("MemberNames (-want +got):\n%s", diff)
	}
	if _, err := resolveDevice(ms, "alice"); err != nil {
		t.Errorf("resolveDevice(alice, one device left) = %v", err)
	}
	put(dgx, "dgx", dgx, "alice", false) // readmitted
	ms, _ = db.Members(ctx)
	if id, err := resolveDevice(ms, "alice"); !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), "alice-laptop") {
		t.Errorf("resolveDevice(alice, two devices) = %s, %v; want refused naming her devices", id, err)
	}
	if id, err := resolveDevice(ms, "alice-laptop"); err != nil || id != alap {
		t.Errorf("resolveDevice(alice-laptop) = %s, %v; want %s", id, err, alap)
	}
	// A policy's Slurm user of a person is that of each of their devices.
	users, err := resolveKeys(ms, map[string]string{"alice": "asmith"})
	if diff := cmp.Diff(map[string]string{dgx: "asmith", alap: "asmith"}, users); err != nil || diff != "" {
		t.Errorf("resolveKeys(alice) = %v (-want +got):\n%s", err, diff)
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
