//go:build linux

package e2e

import (
	"context"
	"strings"
	"testing"
)

// TestCreatorAddsLaptop is the quick start's path: the station creates the
// pool as alice and makes a code for a device of hers; the laptop runs the
// join command printed there and, with no wait beyond the join, invites
// another machine as an owner would; the station lists alice with both
// devices under her.
func TestCreatorAddsLaptop(t *testing.T) {
	l := newLAN(t, "station", "laptop")
	station, laptop := l.host("station"), l.host("laptop")
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	mustCLI(t, station, "pool", "create", "--as", "alice")
	out := mustCLI(t, station, "pool", "add-device")
	join := strings.Fields(lastLineWith(out, "  labpool pool join "))
	if len(join) != 5 || join[4] != station.ip+":7420" || join[3] != lastLine(out) || !strings.Contains(out, "adds one device to alice, as owner") {
		t.Fatalf("pool add-device printed no join command with the station's address (%s:7420) and its code:\n%s", station.ip, out)
	}
	mustCLI(t, laptop, join[1:]...)
	if out, errOut, code := laptop.cli("pool", "invite", "--role", "member"); code != 0 {
		t.Fatalf("the laptop, alice's, invites right after its join: exit %d: %s%s", code, out, errOut)
	}
	ps, err := station.client().Pool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	for _, p := range ps.People {
		if p.Name == "alice" && p.Role == "owner" {
			for _, d := range p.Devices {
				devices = append(devices, d.Name)
			}
		}
	}
	if strings.Join(devices, ",") != "laptop,station" && strings.Join(devices, ",") != "station,laptop" {
		t.Errorf("the station's people: %+v; want alice, owner, with the station and the laptop", ps.People)
	}
	members := mustCLI(t, station, "pool", "members")
	t.Logf("add-device:\n%s\nmembers:\n%s", out, members)
	if !strings.Contains(members, "\nalice ") || !strings.Contains(members, "\n  station ") || !strings.Contains(members, "\n  laptop ") {
		t.Errorf("pool members on the station:\n%s\nwant alice with the station and the laptop under her", members)
	}
}
