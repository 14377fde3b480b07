package folders

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// TestRoundTripEveryRoute calls every route of Routes through its client
// (Client to browse, HTTPSource to read for a copy) and the real handler
// over a registry, as alice, a member of a share she alone may read.
func TestRoundTripEveryRoute(t *testing.T) {
	p := newPool(t)
	alice := newDevice(t)
	p.roles[alice.id] = "member"
	privateShare(t, p, alice, false)
	l := &peerapitest.Loopback{Handler: p.srv.Config.Handler, Prepare: func(r *http.Request) *http.Request {
		r.Header.Set(peerHeader, alice.id)
		return r
	}}
	src := HTTPSource{Client: &http.Client{Transport: l}, Folder: "private", Grant: p.grant(alice, "private", "", alice.id)}
	ctx := t.Context()
	readAll := func(t *testing.T, rc io.ReadCloser, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	peerapitest.RoundTrip(t, Routes, l, map[string]func(*testing.T, peerapi.Conn){
		"GET /v1/folders": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.List(ctx)
			if err != nil || len(got) != 1 || got[0].Name != "private" || got[0].Mode != "ro" {
				t.Errorf("List = %+v, %v", got, err)
			}
		},
		"PATCH /v1/folders/{name}/members": func(t *testing.T, c peerapi.Conn) {
			bob := newDevice(t)
			p.roles[bob.id] = "member"
			if _, err := (Client{c}).ChangeMembers(ctx, "private", MembersChange{Add: []string{bob.id}}); err == nil || !strings.Contains(err.Error(), RuleMembers) {
				t.Errorf("ChangeMembers by a member who did not share it = %v; want a refusal naming %q", err, RuleMembers)
			}
		},
		"GET /v1/folders/{name}/ls": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Ls(ctx, "private", "")
			var names []string
			for _, e := range got {
				names = append(names, e.Name)
			}
			if slices.Sort(names); err != nil || !slices.Equal(names, []string{"secret.txt", "sub"}) {
				t.Errorf("Ls = %v, %v", names, err)
			}
			if _, err := (Client{c}).Ls(ctx, "nothing here", ""); err == nil {
				t.Error("Ls of no share: no refusal")
			}
		},
		"GET /v1/folders/{name}/walk": func(t *testing.T, c peerapi.Conn) {
			var rels []string
			err := src.Walk(ctx, "", func(m FileMeta) error { rels = append(rels, m.Rel); return nil })
			if slices.Sort(rels); err != nil || !slices.Contains(rels, "sub/deep.txt") {
				t.Errorf("Walk = %v, %v", rels, err)
			}
		},
		"GET /v1/folders/{name}/sums": func(t *testing.T, c peerapi.Conn) {
			got, err := src.Sums(ctx, "secret.txt")
			if err != nil || got.Size != int64(len("for alice")) || len(got.Blocks) != 1 {
				t.Errorf("Sums = %+v, %v", got, err)
			}
		},
		"GET /v1/folders/{name}/read": func(t *testing.T, c peerapi.Conn) {
			rc, err := src.Read(ctx, "secret.txt", 4, 5)
			if got := readAll(t, rc, err); got != "alice" {
				t.Errorf("Read = %q", got)
			}
			bad := src
			bad.Grant = p.grant(newDevice(t), "private", "", alice.id)
			if _, err := bad.Read(ctx, "secret.txt", 0, 3); err == nil {
				t.Error("Read on a stranger's grant: no refusal")
			}
		},
		"GET /v1/folders/{name}/blocks": func(t *testing.T, c peerapi.Conn) {
			rc, err := src.Blocks(ctx, "secret.txt", 0, 1)
			if got := readAll(t, rc, err); !strings.Contains(got, "for alice") {
				t.Errorf("Blocks = %q", got)
			}
		},
		"POST /v1/folders/{name}/bundle": func(t *testing.T, c peerapi.Conn) {
			rc, err := src.Bundle(ctx, []string{"secret.txt", "sub/deep.txt"})
			if got := readAll(t, rc, err); !strings.Contains(got, "for alice") || !strings.Contains(got, "deeper") {
				t.Errorf("Bundle = %q", got)
			}
		},
	})
}
