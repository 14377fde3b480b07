package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
)

// TestWriteMembersPeople: `pool members` lists people with their role and
// their devices under them (this machine, online, offline), and marks a
// removed person and a removed device "(removed)"; a daemon of before,
// which sends no people, shows each device as a person of its own.
func TestWriteMembersPeople(t *testing.T) {
	added := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	at := added.Local().Format(time.DateTime)
	members := []app.Member{
		{ID: "DGX-ID", Name: "dgx", Role: "owner", AddedAt: added, Self: true, Online: true, PersonID: "DGX-ID", PersonName: "alice"},
		{ID: "LAP-ID", Name: "alice-laptop", Role: "owner", AddedAt: added, Online: true, PersonID: "DGX-ID", PersonName: "alice"},
		{ID: "BOB-ID", Name: "bob-laptop", Role: "member", AddedAt: added, Removed: true, PersonID: "BOB-ID", PersonName: "bob"},
		{ID: "CWS-ID", Name: "carol-ws", Role: "member", AddedAt: added, PersonID: "CAR-ID", PersonName: "carol"},
		{ID: "CAR-ID", Name: "carol-old", Role: "member", AddedAt: added, Removed: true, PersonID: "CAR-ID", PersonName: "carol"},
	}
	tests := []struct {
		name string
		ps   app.PoolStatus
		want []string // the lines, spaces squeezed
	}{
		{"people", app.PoolStatus{PoolID: "pool-1", Members: members, People: app.PeopleOf(members)}, []string{
			"pool pool-1",
			"NAME ROLE STATE ID ADDED",
			"alice owner",
			"dgx this machine DGX-ID " + at,
			"alice-laptop online LAP-ID " + at,
			"bob (removed) member",
			"bob-laptop (removed) BOB-ID " + at,
			"carol member",
			"carol-ws offline CWS-ID " + at,
			"carol-old (removed) CAR-ID " + at,
		}},
		{"a daemon of before: a person per device", app.PoolStatus{PoolID: "pool-1", Members: []app.Member{
			{ID: "DGX-ID", Name: "dgx", Role: "owner", AddedAt: added, Self: true},
			{ID: "BOB-ID", Name: "bob-laptop", Role: "member", AddedAt: added, Removed: true},
		}}, []string{
			"pool pool-1",
			"NAME ROLE STATE ID ADDED",
			"bob-laptop (removed) member",
			"bob-laptop (removed) BOB-ID " + at,
			"dgx owner",
			"dgx this machine DGX-ID " + at,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeMembers(&b, tt.ps); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
				got = append(got, strings.Join(strings.Fields(l), " "))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("pool members:\n%s\nwant (spaces squeezed):\n%s", b.String(), strings.Join(tt.want, "\n"))
			}
			if tt.name == "people" && !strings.Contains(b.String(), "\n  dgx ") || strings.Contains(b.String(), " \n") {
				t.Errorf("a device is not indented under its person, or a line ends in spaces:\n%s", b.String())
			}
		})
	}
}

// TestPoolPeopleVerbs: create and join send the person's name (--as, or
// the OS user's), add-device prints the code, its single use, expiry and
// the join command with this machine's address, and passes --for; a
// refusal names the rule; merge sends both people.
func TestPoolPeopleVerbs(t *testing.T) {
	expiry := fakeExpiry.Local().Format(time.DateTime)
	tests := []struct {
		name     string
		args     []string
		code     int
		lines    []string // stdout, exactly
		contains string   // in stdout
		err      string   // in stderr
		asked    any
	}{
		{name: "create --as", args: []string{"pool", "create", "--as", "alice"}, code: ExitOK, asked: app.CreateRequest{As: "alice"}, contains: "with you (alice) as its owner"},
		{name: "create as the OS user", args: []string{"pool", "create"}, code: ExitOK, asked: app.CreateRequest{As: app.OSUserName()}},
		{name: "join --as", args: []string{"pool", "join", "CODE", "192.0.2.9:7420", "--as", "bob"}, code: ExitOK,
			asked: app.JoinRequest{Code: "CODE", Addr: "192.0.2.9:7420", As: "bob"}},
		{name: "add-device", args: []string{"pool", "add-device"}, code: ExitOK, asked: app.AddDeviceRequest{}, lines: []string{
			"Code 4567cdef adds one device to alice, as owner, until " + expiry + " (single use). On the new device, run:",
			"  labpool pool join TIGER-LAMP-4823 192.0.2.1:7420",
			"Join code:",
			"TIGER-LAMP-4823",
		}},
		{name: "add-device --for", args: []string{"pool", "add-device", "--for", "alice"}, code: ExitOK, asked: app.AddDeviceRequest{For: "alice"}},
		{name: "add-device for whom one may not", args: []string{"pool", "add-device", "--for", "carol"}, code: ExitFailure,
			err: "only a person's own devices, or an admin or owner who may manage them", asked: app.AddDeviceRequest{For: "carol"}},
		{name: "merge", args: []string{"pool", "merge", "bob-laptop", "bob"}, code: ExitOK, asked: app.MergeRequest{Who: "bob-laptop", Into: "bob"},
			lines: []string{"Merged bob-laptop into bob: its devices are bob's now, with that name and role."}},
		{name: "merge needs two", args: []string{"pool", "merge", "bob"}, code: ExitUsage},
		{name: "add-device takes no argument", args: []string{"pool", "add-device", "alice"}, code: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pool := &fakePool{}
			startDaemon(t, dir, pool)
			code, stdout, stderr := run(t, Hooks{}, append([]string{"--data", dir}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.err) {
				t.Fatalf("exit %d, want %d; stderr %q, want %q in it", code, tt.code, stderr, tt.err)
			}
			if !strings.Contains(stdout, tt.contains) {
				t.Errorf("stdout %q, want %q in it", stdout, tt.contains)
			}
			if tt.lines != nil && stdout != strings.Join(tt.lines, "\n")+"\n" {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, strings.Join(tt.lines, "\n"))
			}
			var asked any
			if len(pool.asked) > 0 {
				asked = pool.asked[0]
			}
			if asked != tt.asked || len(pool.asked) > 1 {
				t.Errorf("the daemon was asked %+v, want %+v", pool.asked, tt.asked)
			}
		})
	}
}

// TestPoolTargetHelp: remove, readmit and role say that a person's name
// acts on all of their devices and a device's name on one.
func TestPoolTargetHelp(t *testing.T) {
	for _, verb := range []string{"remove", "readmit", "role"} {
		code, stdout, _ := run(t, Hooks{}, "pool", verb, "--help")
		if code != ExitOK || !strings.Contains(stdout, "NAME|DEVICE") || !strings.Contains(stdout, "person's name") {
			t.Errorf("pool %s --help: exit %d:\n%s", verb, code, stdout)
		}
	}
}

// TestWriteJoined: a join says whose device this machine is, and, when an
// invite made it a person of a name another person has, how an owner
// makes them one (by their devices: the name is ambiguous).
func TestWriteJoined(t *testing.T) {
	dev := func(id, name string, self bool) app.PersonDevice {
		return app.PersonDevice{ID: id, Name: name, Self: self}
	}
	alice := app.Person{ID: "A1", Name: "alice", Role: "owner", Active: true, Devices: []app.PersonDevice{dev("A1", "dgx", false), dev("A2", "alice-laptop", true)}, Self: true}
	twin := app.Person{ID: "L1", Name: "Alice", Role: "member", Active: true, Devices: []app.PersonDevice{dev("L1", "laptop", true)}, Self: true}
	other := alice
	other.Self, other.Devices = false, alice.Devices[:1]
	tests := []struct {
		name   string
		people []app.Person
		want   []string
	}{
		{"a device of alice", []app.Person{alice}, []string{"Joined pool pool-1 as a device of alice (owner): 1 person, 2 devices."}},
		{"a second alice", []app.Person{twin, other}, []string{
			"Joined pool pool-1 as a device of Alice (member): 2 people, 2 devices.",
			"Another person is named Alice too. If this machine is theirs, an owner makes them one person: `labpool pool merge L1 A1` (next time, `labpool pool add-device` on their machine makes a code that adds it to them).",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writeJoined(&b, app.PoolStatus{PoolID: "pool-1", People: tt.people})
			if got := b.String(); got != strings.Join(tt.want, "\n")+"\n" {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
		})
	}
}
