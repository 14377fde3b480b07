package copies_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// TestRoundTripEveryRoute makes every call of Routes as the engine makes
// it (a laptop asks gpu2 to pull gpu1's folder, then follows the copy),
// through gpu2's real handler.
func TestRoundTripEveryRoute(t *testing.T) {
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	gpu1.share(t, "data", false, map[string]string{"a.txt": "alpha"})
	gpu2.share(t, "scratch", true, nil)
	lb := &peerapitest.Loopback{Handler: gpu2.srv.Config.Handler, Prepare: func(r *http.Request) *http.Request {
		r.Header.Set(peerHeader, laptop.id)
		return r
	}}
	laptop.via.Store(lb)
	var started copies.Transfer
	peerapitest.RoundTrip(t, copies.Routes, lb, map[string]func(*testing.T, peerapi.Conn){
		"POST /v1/transfers": func(t *testing.T, _ peerapi.Conn) {
			var err error
			started, err = laptop.rcv.Load().Copy(t.Context(), copies.Request{Src: "gpu1:data", Dst: "gpu2:scratch/"})
			if err != nil || started.Node != gpu2.id || started.ID == "" {
				t.Fatalf("Copy = %+v, %v; want it started on gpu2", started, err)
			}
		},
		"GET /v1/transfers/{id}": func(t *testing.T, _ peerapi.Conn) {
			got, err := laptop.rcv.Load().Transfer(t.Context(), gpu2.id, started.ID, 10*time.Second)
			if err != nil || got.ID != started.ID || got.State != "done" || got.Progress.Done != int64(len("alpha")) {
				t.Errorf("Transfer = %+v, %v; want the copy done", got, err)
			}
			if _, err := laptop.rcv.Load().Transfer(t.Context(), gpu2.id, "no such copy", 0); err == nil {
				t.Error("Transfer of no copy: no refusal")
			}
		},
	})
}
