package folders

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// as is a connection to p's handler as the device id.
func (p *pool) as(id string) peerapi.Conn {
	return peerapi.Conn{Doer: &peerapitest.Loopback{Handler: p.srv.Config.Handler, Prepare: func(r *http.Request) *http.Request {
		r.Header.Set(peerHeader, id)
		return r
	}}, Node: "node"}
}

// TestChangeMembersFromAnotherMachine: who may change a share's members
// from their own machine, and what the others are told. The share
// "private" of the holder is alice's alone, shared by sharer.
func TestChangeMembersFromAnotherMachine(t *testing.T) {
	p := newPool(t)
	alice, bob, sharer, admin, owner, viewer := newDevice(t), newDevice(t), newDevice(t), newDevice(t), newDevice(t), newDevice(t)
	for _, d := range []struct {
		d    device
		role string
	}{{alice, "member"}, {bob, "member"}, {sharer, "member"}, {admin, "admin"}, {owner, "owner"}, {viewer, "viewer"}} {
		p.roles[d.d.id] = d.role
	}
	privateShare(t, p, alice, true)
	s, _ := p.reg.Get("private")
	s.Sharer = sharer.id
	if _, err := p.reg.Add(s); err != nil {
		t.Fatal(err)
	}
	stranger := newDevice(t)
	for _, tc := range []struct {
		name   string
		who    device
		folder string
		ch     MembersChange
		want   string   // "" allowed, else a part of the refusal
		after  []string // the list after it
	}{
		// A plain member who did not share it widens it to themselves.
		{"member not the sharer", bob, "private", MembersChange{Add: []string{bob.id}}, RuleMembers, []string{alice.id}},
		{"member opens it to all", alice, "private", MembersChange{Every: true}, RuleMembers, []string{alice.id}},
		{"viewer", viewer, "private", MembersChange{Add: []string{viewer.id}}, RuleMembers, []string{alice.id}},
		{"not a member", stranger, "private", MembersChange{Add: []string{stranger.id}}, RuleMembers, []string{alice.id}},
		// A folder the holder does not have: a member learns nothing, an admin is told.
		{"member, no such folder", bob, "nothing", MembersChange{Add: []string{bob.id}}, RuleMembers, []string{alice.id}},
		{"admin, no such folder", admin, "nothing", MembersChange{Add: []string{bob.id}}, ErrNoShare.Error(), []string{alice.id}},
		// Devices the pool does not know are no members to add.
		{"admin adds a stranger", admin, "private", MembersChange{Add: []string{stranger.id}}, "not a device of the pool", []string{alice.id}},
		{"set and add", admin, "private", MembersChange{Set: []string{bob.id}, Add: []string{bob.id}}, "not both", []string{alice.id}},
		{"remove the last", owner, "private", MembersChange{Remove: []string{alice.id}}, "whole pool", []string{alice.id}},
		{"sharer adds bob", sharer, "private", MembersChange{Add: []string{bob.id}}, "", sorted(alice.id, bob.id)},
		{"admin removes alice", admin, "private", MembersChange{Remove: []string{alice.id}}, "", []string{bob.id}},
		{"owner sets", owner, "private", MembersChange{Set: []string{alice.id, bob.id, alice.id}}, "", sorted(alice.id, bob.id)},
		{"holder's own user opens it", p.self, "private", MembersChange{Every: true}, "", nil},
		{"add to every member", owner, "private", MembersChange{Add: []string{bob.id}}, "set its list of members first", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := Client{p.as(tc.who.id)}.ChangeMembers(t.Context(), tc.folder, tc.ch)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want == "" && !slices.Equal(info.Members, tc.after):
				t.Errorf("reply lists %v; want %v", info.Members, tc.after)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v; want a refusal naming %q", err, tc.want)
			}
			if s, _ := p.reg.Get("private"); !slices.Equal(s.Members, tc.after) {
				t.Errorf("members are %v; want %v", s.Members, tc.after)
			}
		})
	}
}

func sorted(ids ...string) []string { slices.Sort(ids); return ids }

// TestChangeMembersForgedSharer: a device that claims in its request to
// be the share's sharer (or someone else) is refused and changes nothing:
// who asks is the device TLS proved, never what the body says.
func TestChangeMembersForgedSharer(t *testing.T) {
	p := newPool(t)
	alice, bob := newDevice(t), newDevice(t)
	p.roles[alice.id], p.roles[bob.id] = "member", "member"
	privateShare(t, p, alice, true)
	s, _ := p.reg.Get("private")
	s.Sharer = alice.id
	p.reg.Add(s)
	for _, body := range []string{
		`{"add":["` + bob.id + `"],"sharer":"` + alice.id + `"}`,
		`{"add":["` + bob.id + `"],"caller":{"id":"` + alice.id + `","role":"owner"}}`,
		`{"add":["` + bob.id + `"]}`,
	} {
		req, _ := http.NewRequest("PATCH", "https://node/v1/folders/private/members", strings.NewReader(body))
		resp, err := p.client(bob.id).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Errorf("%s: %s", body, resp.Status)
		}
		if s, _ := p.reg.Get("private"); !slices.Equal(s.Members, []string{alice.id}) {
			t.Fatalf("%s: members are %v", body, s.Members)
		}
	}
	// The sharer recorded by the holder is what counts: alice may.
	if _, err := (Client{p.as(alice.id)}).ChangeMembers(t.Context(), "private", MembersChange{Add: []string{bob.id}}); err != nil {
		t.Errorf("the sharer is refused: %v", err)
	}
}

// TestChangeMembersTakenBack: a change the pool cannot be told of (its
// record refused) is taken back on the holder.
func TestChangeMembersTakenBack(t *testing.T) {
	p := newPool(t)
	alice, bob := newDevice(t), newDevice(t)
	p.roles[alice.id], p.roles[bob.id] = "member", "member"
	privateShare(t, p, alice, true)
	boom := errors.New("the replica refuses it")
	a := Access{Role: func(string) string { return "member" }, Changed: func(_ context.Context, s Share) (Info, error) { return Info{}, boom }}
	_, err := ChangeMembers(t.Context(), p.reg, a, Caller{ID: p.self.id}, "private", MembersChange{Add: []string{bob.id}})
	if !errors.Is(err, boom) {
		t.Errorf("ChangeMembers = %v; want %v", err, boom)
	}
	if s, _ := p.reg.Get("private"); !slices.Equal(s.Members, []string{alice.id}) {
		t.Errorf("members are %v after a refused record", s.Members)
	}
}

// FuzzChangeMembers: whatever body a member sends, the holder answers
// without failing, and a list it accepts holds at most MaxMembers
// non-empty device IDs, each once, none of them unknown to the pool; a
// body it refuses changes nothing.
func FuzzChangeMembers(f *testing.F) {
	f.Add(`{"add":["A"]}`)
	f.Add(`{"set":["A","A","B"]}`)
	f.Add(`{"remove":["A"]}`)
	f.Add(`{"every":true,"add":["B"]}`)
	f.Add(`{"add":[""]}`)
	f.Add(`{"sharer":"A"}`)
	f.Fuzz(func(t *testing.T, body string) {
		p := newPool(t)
		alice := newDevice(t)
		p.roles[alice.id], p.roles["A"], p.roles["B"] = "member", "member", "member"
		privateShare(t, p, alice, true)
		req, _ := http.NewRequest("PATCH", "https://node/v1/folders/private/members", strings.NewReader(body))
		resp, err := p.client(p.self.id).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s, _ := p.reg.Get("private")
		if resp.StatusCode/100 != 2 {
			if !slices.Equal(s.Members, []string{alice.id}) {
				t.Errorf("refused (%s) but the list is %v", resp.Status, s.Members)
			}
			return
		}
		if len(s.Members) > MaxMembers {
			t.Errorf("%d members", len(s.Members))
		}
		seen := map[string]bool{}
		for _, id := range s.Members {
			if id == "" || seen[id] || p.roles[id] == "" {
				t.Errorf("members %v: an empty, repeated or unknown device", s.Members)
			}
			seen[id] = true
		}
	})
}
