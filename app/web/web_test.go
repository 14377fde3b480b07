package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/sync/store"
)

const selfID, peerID = apptest.SelfID, apptest.PeerID

// fakePool is an app.PoolManager of func fields; a nil field answers a
// zero value.
type fakePool struct {
	status  func() (app.PoolStatus, error)
	create  func(app.CreateRequest) (app.JoinCode, error)
	device  func(app.AddDeviceRequest) (app.DeviceCode, error)
	merge   func(app.MergeRequest) error
	join    func(app.JoinRequest) (app.PoolStatus, error)
	remove  func(id string) error
	readmit func(id string) error
	probe   func(addr string) (app.ProbeResult, error)
	invite  func(app.InviteRequest) (app.NewInvite, error)
	revoke  func(id string) error
	role    func(id, role string) error
}

func (f *fakePool) CreateInvite(_ context.Context, r app.InviteRequest) (app.NewInvite, error) {
	if f.invite == nil {
		return app.NewInvite{}, nil
	}
	return f.invite(r)
}

func (f *fakePool) RevokeInvite(_ context.Context, id string) error {
	if f.revoke == nil {
		return nil
	}
	return f.revoke(id)
}

func (f *fakePool) SetRole(_ context.Context, id, role string) error {
	if f.role == nil {
		return nil
	}
	return f.role(id, role)
}

func (f *fakePool) Status(context.Context) (app.PoolStatus, error) {
	if f.status == nil {
		return app.PoolStatus{Members: []app.Member{}}, nil
	}
	return f.status()
}

func (f *fakePool) Create(_ context.Context, r app.CreateRequest) (app.JoinCode, error) {
	if f.create == nil {
		return app.JoinCode{}, nil
	}
	return f.create(r)
}

func (f *fakePool) AddDevice(_ context.Context, r app.AddDeviceRequest) (app.DeviceCode, error) {
	if f.device == nil {
		return app.DeviceCode{}, nil
	}
	return f.device(r)
}

func (f *fakePool) Merge(_ context.Context, r app.MergeRequest) error {
	if f.merge == nil {
		return nil
	}
	return f.merge(r)
}

func (f *fakePool) Join(_ context.Context, r app.JoinRequest) (app.PoolStatus, error) {
	if f.join == nil {
		return app.PoolStatus{}, nil
	}
	return f.join(r)
}

func (f *fakePool) Remove(_ context.Context, id string) error {
	if f.remove == nil {
		return nil
	}
	return f.remove(id)
}

func (f *fakePool) Readmit(_ context.Context, id string) error {
	if f.readmit == nil {
		return nil
	}
	return f.readmit(id)
}

func (f *fakePool) Probe(_ context.Context, addr string) (app.ProbeResult, error) {
	if f.probe == nil {
		return app.ProbeResult{}, nil
	}
	return f.probe(addr)
}

// newService returns a service over a replica of two nodes (this one and a
// peer), each with a node record and a sample of one GPU.
func newService(t *testing.T, pool app.PoolManager) *app.Service {
	t.Helper()
	db, self := newReplica(t)
	return apptest.NewService(db, self, nil, pool)
}

// newReplica returns a replica of two nodes (this one and a peer), each
// with a node record and a sample of one GPU, and this machine's identity.
func newReplica(t *testing.T) (*store.DB, app.Self) {
	t.Helper()
	return newReplicaAt(t, filepath.Join(t.TempDir(), "replica.db"))
}

// newReplicaAt is newReplica at path.
func newReplicaAt(t *testing.T, path string) (*store.DB, app.Self) {
	t.Helper()
	db := apptest.OpenReplica(t, path)
	now := time.Now().UTC().Truncate(time.Second)
	var machines []apptest.Machine
	for i, id := range []string{selfID, peerID} {
		name := []string{"self", "peer"}[i]
		s := agent.Sample{Time: now.Add(-time.Duration(i) * time.Second), Host: host.Stats{CPUPercent: 25, MemUsedBytes: 1 << 30, MemTotalBytes: 1 << 32},
			GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-" + name, Name: "NVIDIA Test", UtilPercent: 50, MemTotalBytes: 1 << 34}}}
		machines = append(machines, apptest.Machine{ID: id, Name: name, Addr: "10.0.0.1:7420", Sample: s})
	}
	apptest.WriteMachines(t, db, now, machines...)
	return db, app.Self{ID: selfID, ShortID: "SELF-AAAA", Name: "self", APIVersion: app.APIVersion}
}

func newHandler(svc *app.Service) http.Handler {
	return web.Handler(svc, nil, slog.New(slog.DiscardHandler))
}

// serve runs one request through h and returns the response.
func serve(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, path, nil)
	} else {
		r = httptest.NewRequest(method, path, strings.NewReader(body))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// decodeAs decodes the JSON body of w into a new T.
func decodeAs[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if err := json.NewDecoder(w.Body).Decode(&v); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	return v
}

func TestHandlerRoutes(t *testing.T) {
	ctx := context.Background()
	var removed, probed string
	var joined app.JoinRequest
	pool := &fakePool{
		status: func() (app.PoolStatus, error) {
			return app.PoolStatus{PoolID: "pool-1", Members: []app.Member{{ID: peerID, Name: "peer"}}}, nil
		},
		create: func(app.CreateRequest) (app.JoinCode, error) {
			return app.JoinCode{PoolID: "pool-1", Code: "WORD-WORD-1234"}, nil
		},
		join: func(r app.JoinRequest) (app.PoolStatus, error) {
			joined = r
			return app.PoolStatus{PoolID: "pool-2", Members: []app.Member{}}, nil
		},
		remove: func(id string) error { removed = id; return nil },
		probe: func(addr string) (app.ProbeResult, error) {
			probed = addr
			return app.ProbeResult{Addr: addr, ID: peerID, Member: true, Status: 200, Message: "ok"}, nil
		},
	}
	svc := newService(t, pool)
	h := newHandler(svc)
	wantNodes, _ := svc.Nodes(ctx)
	wantGPUs, _ := svc.GPUs(ctx)
	wantHistory, _ := svc.History(ctx, peerID, 300)

	tests := []struct {
		method, path, body string
		status             int
		check              func(t *testing.T, w *httptest.ResponseRecorder)
	}{
		{"GET", "/api/v1/self", "", 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			if got := decodeAs[app.Self](t, w); got.ID != selfID || got.Name != "self" || got.APIVersion != app.APIVersion {
				t.Errorf("self = %+v", got)
			}
		}},
		{"GET", "/api/v1/nodes", "", 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			got := decodeAs[[]app.Node](t, w)
			if diff := cmp.Diff(wantNodes, got); diff != "" || len(got) != 2 {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		}},
		{"GET", "/api/v1/gpus", "", 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			got := decodeAs[[]app.GPU](t, w)
			if diff := cmp.Diff(wantGPUs, got); diff != "" || len(got) != 2 {
				t.Errorf("gpus (-want +got):\n%s", diff)
			}
		}},
		{"GET", "/api/v1/history?node=" + peerID + "&seconds=300", "", 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			got := decodeAs[app.History](t, w)
			if diff := cmp.Diff(wantHistory, got); diff != "" || len(got.Samples) != 1 {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		}},
		{"GET", "/api/v1/pool", "", 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			if got := decodeAs[app.PoolStatus](t, w); got.PoolID != "pool-1" || len(got.Members) != 1 {
				t.Errorf("pool = %+v", got)
			}
		}},
		{"POST", "/api/v1/pool/create", "", 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			if got := decodeAs[app.JoinCode](t, w); got != (app.JoinCode{PoolID: "pool-1", Code: "WORD-WORD-1234"}) {
				t.Errorf("join code = %+v", got)
			}
		}},
		{"POST", "/api/v1/pool/join", `{"code":"C0DE","addr":"10.0.0.9:7420"}`, 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			if got := decodeAs[app.PoolStatus](t, w); got.PoolID != "pool-2" {
				t.Errorf("pool = %+v", got)
			}
			if joined != (app.JoinRequest{Code: "C0DE", Addr: "10.0.0.9:7420"}) {
				t.Errorf("pool manager got %+v", joined)
			}
		}},
		{"DELETE", "/api/v1/pool/members/" + peerID, "", 204, func(t *testing.T, w *httptest.ResponseRecorder) {
			if removed != peerID || w.Body.Len() != 0 {
				t.Errorf("removed %q with body %q", removed, w.Body)
			}
		}},
		{"POST", "/api/v1/probe", `{"addr":"10.0.0.9:7420"}`, 200, func(t *testing.T, w *httptest.ResponseRecorder) {
			if got := decodeAs[app.ProbeResult](t, w); !got.Member || got.ID != peerID || probed != "10.0.0.9:7420" {
				t.Errorf("probe = %+v of %q", got, probed)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			w := serve(h, tt.method, tt.path, tt.body)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d; body %s", w.Code, tt.status, w.Body)
			}
			tt.check(t, w)
		})
	}
}

// wantError checks that w is the JSON error {code, message} with status.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int, code, message string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	got := decodeAs[app.Error](t, w)
	if got.Code != code || (message != "" && got.Message != message) || got.Message == "" {
		t.Errorf("error = %+v, want code %q message %q", got, code, message)
	}
}

func TestHandlerErrorStatus(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"invalid", fmt.Errorf("%w: bad code", app.ErrInvalid), 400, "invalid"},
		{"not found", fmt.Errorf("remove member x: %w", app.ErrNotFound), 404, "not_found"},
		{"forbidden", fmt.Errorf("join pool: %w", app.ErrForbidden), 403, "forbidden"},
		{"read only", app.ErrReadOnly, 503, "no_daemon"},
		{"api error", fmt.Errorf("relay: %w", &app.APIError{Status: 409, Code: "conflict", Message: "already in a pool"}), 409, "conflict"},
		{"timeout", fmt.Errorf("join pool: %w", context.DeadlineExceeded), 504, "timeout"},
		{"internal", errors.New("disk on fire"), 500, "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &fakePool{
				status: func() (app.PoolStatus, error) { return app.PoolStatus{}, tt.err },
				create: func(app.CreateRequest) (app.JoinCode, error) { return app.JoinCode{}, tt.err },
				join:   func(app.JoinRequest) (app.PoolStatus, error) { return app.PoolStatus{}, tt.err },
				remove: func(string) error { return tt.err },
				probe:  func(string) (app.ProbeResult, error) { return app.ProbeResult{}, tt.err },
			}
			h := newHandler(newService(t, pool))
			for _, r := range []struct{ method, path, body string }{
				{"GET", "/api/v1/pool", ""},
				{"POST", "/api/v1/pool/create", ""},
				{"POST", "/api/v1/pool/join", `{"code":"x"}`},
				{"DELETE", "/api/v1/pool/members/x", ""},
				{"POST", "/api/v1/probe", `{"addr":"h:1"}`},
			} {
				t.Run(r.method+" "+r.path, func(t *testing.T) {
					wantError(t, serve(h, r.method, r.path, r.body), tt.status, tt.code, tt.err.Error())
				})
			}
		})
	}
}

func TestHandlerBadRequests(t *testing.T) {
	h := newHandler(newService(t, &fakePool{}))
	ro := newHandler(newService(t, nil))
	tests := []struct {
		name               string
		h                  http.Handler
		method, path, body string
		status             int
		code               string
	}{
		{"join: bad JSON", h, "POST", "/api/v1/pool/join", `{"code":`, 400, "invalid"},
		{"join: not an object", h, "POST", "/api/v1/pool/join", `[1]`, 400, "invalid"},
		{"join: no body", h, "POST", "/api/v1/pool/join", "", 400, "invalid"},
		{"join: no code", h, "POST", "/api/v1/pool/join", `{"addr":"h:1"}`, 400, "invalid"},
		{"probe: bad JSON", h, "POST", "/api/v1/probe", `nope`, 400, "invalid"},
		{"probe: no addr", h, "POST", "/api/v1/probe", `{}`, 400, "invalid"},
		{"history: seconds not a number", h, "GET", "/api/v1/history?node=" + peerID + "&seconds=5m", "", 400, "invalid"},
		{"history: no seconds", h, "GET", "/api/v1/history?node=" + peerID, "", 400, "invalid"},
		{"history: no node", h, "GET", "/api/v1/history?seconds=60", "", 400, "invalid"},
		{"history: zero seconds", h, "GET", "/api/v1/history?node=" + peerID + "&seconds=0", "", 400, "invalid"},
		{"unknown call", h, "GET", "/api/v1/nope", "", 404, "not_found"},
		{"unknown version", h, "GET", "/api/v2/nodes", "", 404, "not_found"},
		{"wrong method", h, "POST", "/api/v1/nodes", "", 404, "not_found"},
		{"remove without id", h, "DELETE", "/api/v1/pool/members/", "", 404, "not_found"},
		{"read-only create", ro, "POST", "/api/v1/pool/create", "", 503, "no_daemon"},
		{"read-only join", ro, "POST", "/api/v1/pool/join", `{"code":"x"}`, 503, "no_daemon"},
		{"read-only remove", ro, "DELETE", "/api/v1/pool/members/x", "", 503, "no_daemon"},
		{"read-only probe", ro, "POST", "/api/v1/probe", `{"addr":"h:1"}`, 503, "no_daemon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, serve(tt.h, tt.method, tt.path, tt.body), tt.status, tt.code, "")
		})
	}
}

func TestHandlerReadOnlyReads(t *testing.T) {
	h := newHandler(newService(t, nil))
	for _, path := range []string{"/api/v1/self", "/api/v1/nodes", "/api/v1/gpus", "/api/v1/pool"} {
		if w := serve(h, "GET", path, ""); w.Code != 200 {
			t.Errorf("GET %s without a daemon: %d %s", path, w.Code, w.Body)
		}
	}
}

func TestHandlerAssets(t *testing.T) {
	assets := fstest.MapFS{"index.html": {Data: []byte("<title>labpool</title>")}}
	h := web.Handler(newService(t, nil), assets, slog.New(slog.DiscardHandler))
	if w := serve(h, "GET", "/", ""); w.Code != 200 || !strings.Contains(w.Body.String(), "labpool") {
		t.Errorf("GET / = %d %q, want the index", w.Code, w.Body)
	}
	wantError(t, serve(h, "GET", "/api/v1/nope", ""), 404, "not_found", "")
	if w := serve(newHandler(newService(t, nil)), "GET", "/", ""); w.Code != 404 {
		t.Errorf("GET / with no assets = %d, want 404", w.Code)
	}
}

type sseEvent struct {
	name string
	data json.RawMessage
}

// subscribe opens the events stream of srv and returns its events.
func subscribe(t *testing.T, ctx context.Context, srv *httptest.Server) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/events", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /api/v1/events: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	events := make(chan sseEvent, 16)
	go func() {
		defer close(events)
		web.ReadSSE(resp.Body, func(name string, data json.RawMessage) { events <- sseEvent{name, data} })
	}()
	return events
}

func TestHandlerEvents(t *testing.T) {
	svc := newService(t, nil)
	srv := httptest.NewServer(newHandler(svc))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := subscribe(t, ctx, srv) // the handler subscribed before it answered

	sample := app.Sample{Node: peerID, Time: time.Unix(1700000000, 0).UTC(), CPUPercent: 12.5, GPUUtil: []float64{1}, GPUMemPct: []float64{2}}
	svc.Hub().Emit(app.EventSample, sample)
	svc.Hub().Emit("bad", func() {}) // cannot be encoded: skipped
	svc.Hub().Emit(app.EventNodes, []app.Node{{ID: selfID, Name: "self"}})

	var got []sseEvent
	for len(got) < 2 {
		select {
		case ev := <-events:
			got = append(got, ev)
		case <-time.After(5 * time.Second):
			t.Fatalf("after 5 s got %d of 2 events", len(got))
		}
	}
	var s app.Sample
	if got[0].name != app.EventSample || json.Unmarshal(got[0].data, &s) != nil || !cmp.Equal(s, sample) {
		t.Errorf("first event %s %s, want %s %+v", got[0].name, got[0].data, app.EventSample, sample)
	}
	var nodes []app.Node
	if got[1].name != app.EventNodes || json.Unmarshal(got[1].data, &nodes) != nil || len(nodes) != 1 || nodes[0].Name != "self" {
		t.Errorf("second event %s %s, want %s", got[1].name, got[1].data, app.EventNodes)
	}
	cancel()
	select {
	case _, ok := <-events:
		if ok {
			t.Error("an event after the client left")
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream did not end when the client left")
	}
}

func TestHandlerEventsFanOut(t *testing.T) {
	svc := newService(t, nil)
	srv := httptest.NewServer(newHandler(svc))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := subscribe(t, ctx, srv), subscribe(t, ctx, srv)
	svc.Hub().Emit("ping", map[string]int{"n": 1})
	for i, ch := range []<-chan sseEvent{a, b} {
		select {
		case ev := <-ch:
			if ev.name != "ping" || !bytes.Equal(ev.data, []byte(`{"n":1}`)) {
				t.Errorf("stream %d: %s %s", i, ev.name, ev.data)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("stream %d got nothing", i)
		}
	}
}
