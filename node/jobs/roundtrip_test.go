package jobs

import (
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// TestRoundTripEveryRoute calls every route of Routes through Client and
// the real handler over a manager (a fake runtime), as the job's owner or
// an owner of the pool, and wants what the manager itself answers.
func TestRoundTripEveryRoute(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 1, &memStore{})
	alice := peer("alice")
	l := &peerapitest.Loopback{Handler: Handler(m, func(r *http.Request) Caller {
		return Caller{ID: r.Header.Get("X-Owner"), Role: r.Header.Get("X-Role")}
	})}
	as := func(c Caller) {
		l.Prepare = func(r *http.Request) *http.Request {
			r.Header.Set("X-Owner", c.ID)
			r.Header.Set("X-Role", c.Role)
			return r
		}
	}
	as(alice)
	s, _ := peers.Load(alice.ID)
	spec := Spec{Image: "img", Cmd: []string{"print-sleep", "one", "two"}, GPUs: 1, Ports: []int{8888}}
	proof, err := s.(LaunchSigner).Prove("NODE", spec)
	if err != nil {
		t.Fatal(err)
	}
	var j Job
	refused := func(t *testing.T, err error, code string) {
		t.Helper()
		var r *peerapitest.RefusedError
		if !errors.As(err, &r) || r.Code != code {
			t.Errorf("error %v; want a %q refusal", err, code)
		}
	}
	peerapitest.RoundTrip(t, Routes, l, map[string]func(*testing.T, peerapi.Conn){
		"POST /v1/jobs": func(t *testing.T, c peerapi.Conn) {
			if j, err = (Client{c}).Submit(t.Context(), spec, proof); err != nil || j.Owner != alice.ID || j.State != Running {
				t.Fatalf("Submit = %+v, %v", j, err)
			}
			_, err := (Client{c}).Submit(t.Context(), spec, "")
			refused(t, err, "forbidden")
		},
		"GET /v1/jobs": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.List(t.Context())
			if err != nil || len(got) != 1 || got[0].ID != j.ID {
				t.Errorf("List = %+v, %v", got, err)
			}
		},
		"GET /v1/jobs/{id}": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Get(t.Context(), j.ID)
			want, _ := m.Get(j.ID)
			want = m.View(alice, want)
			want.GPUSeconds = got.GPUSeconds // counts on
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("Get = %+v, %v; want %+v", got, err, want)
			}
			_, err = Client{c}.Get(t.Context(), "no/such job")
			refused(t, err, "not_found")
		},
		"GET /v1/jobs/{id}/stats": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Stats(t.Context(), j.ID)
			if want, werr := m.Stats(t.Context(), j.ID); err != nil || werr != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("Stats = %+v, %v; want %+v, %v", got, err, want, werr)
			}
		},
		"GET /v1/jobs/{id}/logs": func(t *testing.T, c peerapi.Conn) {
			rc, err := Client{c}.Logs(t.Context(), j.ID, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if b, _ := io.ReadAll(rc); strings.TrimSpace(string(b)) != "two" {
				t.Errorf("Logs tail 1 = %q; want the last line", b)
			}
		},
		"GET /v1/jobs/{id}/access": func(t *testing.T, c peerapi.Conn) {
			if err := (Client{c}).Access(t.Context(), j.ID); err != nil {
				t.Errorf("Access of the owner = %v", err)
			}
			as(peer("bob"))
			defer as(alice)
			refused(t, Client{c}.Access(t.Context(), j.ID), "forbidden")
		},
		"POST /v1/jobs/{id}/tunnel": func(t *testing.T, c peerapi.Conn) {
			_, err := Client{c}.Tunnel(t.Context(), j.ID, 9999, strings.NewReader("hello"))
			refused(t, err, "no_port")
		},
		"POST /v1/jobs/{id}/stop": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Stop(t.Context(), j.ID)
			if err != nil || got.ID != j.ID || got.State == Running {
				t.Errorf("Stop = %+v, %v", got, err)
			}
		},
		"DELETE /v1/jobs/{id}": func(t *testing.T, c peerapi.Conn) {
			if err := (Client{c}).Remove(t.Context(), j.ID, true); err != nil {
				t.Errorf("Remove = %v", err)
			}
			if got, err := m.Get(j.ID); !errors.Is(err, ErrNotFound) && !got.Removed {
				t.Errorf("after Remove, Get = %+v, %v; want it removed", got, err)
			}
		},
		"POST /v1/jobs/{id}/handover": func(t *testing.T, c peerapi.Conn) {
			// alice's machine is no job's home: the offer reaches the
			// handler, whose answer refuses it naming a hand-over rule
			// (handover_test.go offers real jobs).
			ans, err := Client{c}.Offer(t.Context(), Offer{Job: Job{ID: "0123456789abcdef", Spec: Spec{Image: "img", Queue: true}}, Fence: 1})
			if err != nil || ans.Accepted || !strings.HasPrefix(ans.Rule, "handover:") {
				t.Errorf("Offer of no proven job = %+v, %v; want refused naming a hand-over rule", ans, err)
			}
		},
		"POST /v1/gpus/{index}/clear": func(t *testing.T, c peerapi.Conn) {
			_, err := Client{c}.ClearGPU(t.Context(), 0)
			refused(t, err, "forbidden") // a member, not an owner
			as(Caller{ID: alice.ID, Role: RoleOwner})
			defer as(alice)
			_, err = Client{c}.ClearGPU(t.Context(), 7)
			refused(t, err, "not_found")
		},
	})
}
