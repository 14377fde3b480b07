package folders

import (
	"errors"
	"testing"
)

// TestMembersArePeople: a share's member list names people (a person's
// ID is the device ID of their first device); the holder opens it to every
// device of a person listed, one they add later too, and to no device of
// anyone else. A device listed alone (a list from before people) keeps
// its access. A device whose person the holder does not know, or a
// removed one (no person), is refused, whatever ID it claims to be a
// device of: the person comes from the holder's own membership log.
func TestMembersArePeople(t *testing.T) {
	persons := map[string]string{"ALICE-DGX": "ALICE-DGX", "ALICE-LAPTOP": "ALICE-DGX", "BOB": "BOB", "BOB-WS": "BOB"}
	cfg := DefaultConfig()
	cfg.Self = "HOLDER"
	cfg.PersonOf = func(id string) string { return persons[id] }
	r, err := OpenWith(cfg, &memStore{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(Share{Name: "data", Path: t.TempDir(), ReadWrite: true, Members: []string{"ALICE-DGX", "BOB-WS"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		device string
		want   error
	}{
		{"ALICE-DGX", nil},
		{"ALICE-LAPTOP", nil}, // a device of a person listed
		{"BOB-WS", nil},       // a device listed alone
		{"BOB", ErrNotMember}, // bob is not listed: one device of his is
		{"MALLORY", ErrNotMember},
	}
	check := func(when string) {
		t.Helper()
		for _, tt := range tests {
			if _, err := r.ResolveFor("data", tt.device, true); !errors.Is(err, tt.want) {
				t.Errorf("%s: mount by %s = %v; want %v", when, tt.device, err, tt.want)
			}
			if o, err := r.OpenFor("data", Caller{ID: tt.device, Role: RoleMember}, Write); !errors.Is(err, tt.want) {
				t.Errorf("%s: write by %s = %v; want %v", when, tt.device, err, tt.want)
			} else if err == nil {
				o.Close()
			}
		}
	}
	check("at share time")
	persons["ALICE-WS"] = "ALICE-DGX" // alice adds a device later
	tests = append(tests, struct {
		device string
		want   error
	}{"ALICE-WS", nil})
	check("after alice adds a device")
	delete(persons, "ALICE-LAPTOP") // removed from the pool
	tests[1].want = ErrNotMember
	check("after alice's laptop is removed")
}

// TestChangeMembersAddsPerson: a change of members from another machine
// may name a person whose first device (their ID) was removed while they
// keep others: the holder knows them as a person of the pool. An ID that
// is neither a device nor a person of the pool is still refused.
func TestChangeMembersAddsPerson(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Self = "HOLDER"
	cfg.IsPerson = func(id string) bool { return id == "ALICE-DGX" } // her dgx removed, her laptop in the pool
	r, err := OpenWith(cfg, &memStore{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(Share{Name: "data", Path: t.TempDir(), Members: []string{"BOB"}}); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{"ADMIN": RoleAdmin, "BOB": RoleMember, "ALICE-LAPTOP": RoleMember}
	a := Access{Role: func(id string) string { return roles[id] }}
	admin := Caller{ID: "ADMIN", Role: RoleAdmin}
	if _, err := ChangeMembers(t.Context(), r, a, admin, "data", MembersChange{Add: []string{"MALLORY"}}); !errors.Is(err, ErrBadMembers) {
		t.Errorf("adding a stranger: %v; want %v", err, ErrBadMembers)
	}
	info, err := ChangeMembers(t.Context(), r, a, admin, "data", MembersChange{Add: []string{"ALICE-DGX"}})
	if err != nil || len(info.Members) != 2 {
		t.Fatalf("adding alice by her person's ID: %+v, %v", info, err)
	}
}
