package app

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labpool/labpool/sync/pool"
)

// TestPersonName: an OS user's name is cut to one the pool accepts.
func TestPersonName(t *testing.T) {
	long := strings.Repeat("é", pool.MaxNameLen) // two bytes each
	tests := []struct{ in, want string }{
		{"alice", "alice"},
		{`LAB\alice`, "alice"},
		{" alice\t", "alice"},
		{"al\x00ice\u200b", "alice"},
		{long, strings.Repeat("é", pool.MaxNameLen/2)},
		{"\xff\xfe", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got := PersonName(tt.in)
		if got != tt.want || len(got) > pool.MaxNameLen || !utf8.ValidString(got) {
			t.Errorf("PersonName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPeopleOf: members group into people by person, with the role of a
// device in the pool; a person with none is inactive; a member of before
// (no person) is a person of its own.
func TestPeopleOf(t *testing.T) {
	ms := []Member{
		{ID: "B2", Name: "bob-ws", Role: "member", PersonID: "B1", PersonName: "bob", Online: true},
		{ID: "A1", Name: "dgx", Role: "owner", PersonID: "A1", PersonName: "alice", Self: true},
		{ID: "B1", Name: "bob-laptop", Role: "viewer", Removed: true, PersonID: "B1", PersonName: "bob"},
		{ID: "C1", Name: "carol-laptop", Role: "member", Removed: true, PersonID: "C1", PersonName: "Carol"},
		{ID: "D1", Name: "old-box", Role: "member"},
	}
	var got []string
	for _, p := range PeopleOf(ms) {
		var devs []string
		for _, d := range p.Devices {
			devs = append(devs, d.Name)
		}
		for _, d := range p.Removed {
			devs = append(devs, d.Name+"(removed)")
		}
		got = append(got, p.ID+" "+p.Name+" "+p.Role+" "+strings.Join(devs, ",")+" active="+boolStr(p.Active)+" self="+boolStr(p.Self))
	}
	want := []string{
		"A1 alice owner dgx active=true self=true",
		"B1 bob member bob-ws,bob-laptop(removed) active=true self=false",
		"C1 Carol member carol-laptop(removed) active=false self=false",
		"D1 old-box member old-box active=true self=false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("PeopleOf:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestAccountPerson: a person is named after the account that asks, never
// after a system account: the packaged daemon's user (labpool, a system
// uid) or root (but the user who ran sudo).
func TestAccountPerson(t *testing.T) {
	tests := []struct {
		name, uid, goos, sudo, want string
	}{
		{"alice", "1000", "linux", "", "alice"},
		{"labpool", "100", "linux", "", ""},
		{"root", "0", "linux", "bob", "bob"},
		{"root", "0", "linux", "", ""},
		{"carol", "501", "darwin", "", "carol"},
		{"_labpool", "250", "darwin", "", ""},
		{`LAB\dave`, "S-1-5-21-1-2-3-1001", "windows", "", "dave"},
	}
	for _, tt := range tests {
		if got := accountPerson(tt.name, tt.uid, tt.goos, tt.sudo); got != tt.want {
			t.Errorf("accountPerson(%q, %s, %s, sudo %q) = %q; want %q", tt.name, tt.uid, tt.goos, tt.sudo, got, tt.want)
		}
	}
}
