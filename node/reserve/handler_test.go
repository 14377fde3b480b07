package reserve_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
	"github.com/labpool/labpool/node/reserve"
)

// callAs is a Client of h as the member who: the transport's proven
// identity is the header the test's caller func reads.
func callAs(h http.Handler, who reserve.Caller) reserve.Client {
	return reserve.Client{Conn: peerapi.Conn{Doer: loopAs(h, who), Node: "node"}}
}

func loopAs(h http.Handler, who reserve.Caller) *peerapitest.Loopback {
	return &peerapitest.Loopback{Handler: h, Prepare: func(r *http.Request) *http.Request {
		r.Header.Set("X-Test-Caller", who.ID+"/"+who.Role)
		return r
	}}
}

func testCaller(r *http.Request) reserve.Caller {
	id, role, _ := strings.Cut(r.Header.Get("X-Test-Caller"), "/")
	return reserve.Caller{ID: id, Role: role}
}

// Every route of the table is served, and reached through its client.
func TestRoutesRoundTrip(t *testing.T) {
	f := newFixture(t, reserve.Policy{})
	h := reserve.Handler(f.book, testCaller)
	ctx := context.Background()
	var r reserve.Reservation
	peerapitest.RoundTrip(t, reserve.Routes, loopAs(h, alice), map[string]func(*testing.T, peerapi.Conn){
		"POST /v1/reservations": func(t *testing.T, c peerapi.Conn) {
			var err error
			r, err = reserve.Client{Conn: c}.Ask(ctx, reserve.Request{GPUs: 2, From: t0.Add(time.Hour), Seconds: 3600})
			if err != nil || r.State != reserve.Accepted || len(r.Units) != 2 {
				t.Fatalf("Ask = %+v, %v", r, err)
			}
		},
		"GET /v1/reservations": func(t *testing.T, c peerapi.Conn) {
			rs, err := reserve.Client{Conn: c}.List(ctx)
			if err != nil || len(rs) != 1 || rs[0].ID != r.ID {
				t.Fatalf("List = %+v, %v", rs, err)
			}
		},
		"DELETE /v1/reservations/{id}": func(t *testing.T, c peerapi.Conn) {
			if _, err := callAs(h, bob).Cancel(ctx, r.ID); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), reserve.RuleCancel) {
				t.Fatalf("bob's Cancel = %v; want 403 naming %q", err, reserve.RuleCancel)
			}
			got, err := reserve.Client{Conn: c}.Cancel(ctx, r.ID)
			if err != nil || got.State != reserve.Cancelled {
				t.Fatalf("Cancel = %+v, %v", got, err)
			}
			if _, err := (reserve.Client{Conn: c}).Cancel(ctx, "rsv-none"); err == nil || !strings.Contains(err.Error(), "404") {
				t.Fatalf("Cancel of none = %v; want 404", err)
			}
		},
	})
}

func TestDecodeRequestRefuses(t *testing.T) {
	for _, in := range []string{
		`{"gpus":1,"from":"2026-03-02T10:00:00Z","seconds":60,"admin":true}`,
		`{"gpus":"two"}`,
		`{"gpus":1,"from":"` + strings.Repeat("9", 5000) + `"}`,
		`not json`,
	} {
		_, err := reserve.DecodeRequest(strings.NewReader(in))
		var e *reserve.Error
		if !errors.As(err, &e) || e.Rule != reserve.RuleForm {
			t.Errorf("DecodeRequest(%.40q) = %v; want refused by %q", in, err, reserve.RuleForm)
		}
	}
}

// FuzzDecodeRequest: a request from the network is decoded or refused,
// and one decoded is accepted or refused by a rule, never a panic.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(`{"gpus":1,"from":"2026-03-02T10:00:00Z","seconds":3600}`)
	f.Add(`{"gpu_ids":[0,3],"from":"2026-03-02T10:00:00+01:00","seconds":9223372036854775807}`)
	f.Add(`{"gpus":2,"from":"0001-01-01T00:00:00Z","seconds":-1,"member":"X"}`)
	f.Fuzz(func(t *testing.T, in string) {
		req, err := reserve.DecodeRequest(strings.NewReader(in))
		if err != nil {
			return
		}
		fx := newFixture(t, reserve.Policy{})
		r, err := fx.book.Reserve(alice, req)
		var e *reserve.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("Reserve(%+v) = %v; want a refusal naming a rule", req, err)
		}
		if err == nil && !r.Until.After(r.From) {
			t.Fatalf("accepted %+v: its span is empty or wrapped", r)
		}
	})
}
