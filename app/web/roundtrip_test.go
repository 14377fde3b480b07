package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
)

// fakeNode is the agent API of every node, answered in memory.
type fakeNode struct{}

func (fakeNode) NodeClient(context.Context, string) (*http.Client, error) {
	return &http.Client{Transport: fakeNode{}}, nil
}

func (fakeNode) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil { // as a node does, read the whole request first
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	w := httptest.NewRecorder()
	switch p := r.URL.Path; {
	case r.Method == http.MethodPost && p == "/v1/jobs":
		json.NewEncoder(w).Encode(jobs.Job{ID: "job-1", Name: "train", Node: selfID, State: "running"})
	case p == "/v1/images":
		json.NewEncoder(w).Encode([]containers.Image{{ID: "sha256:1", Tags: []string{"cuda:12"}}})
	case p == "/v1/images/load" || p == "/v1/images/pull":
		io.WriteString(w, `{"status":"loaded"}`+"\n")
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/v1/gpus/"):
		json.NewEncoder(w).Encode(jobs.Quarantine{UUID: "GPU-1", Index: 1, Reason: "XID 79 (GPU has fallen off the bus)"})
	case strings.HasPrefix(p, "/v1/folders/"):
		io.WriteString(w, `[{"name":"a.txt","size":3}]`)
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"code":"not_found","message":"no such job"}`)
	}
	return w.Result(), nil
}

type allOnline struct{}

func (allOnline) Online(string) bool { return true }

type fakeFolders struct{}

func (fakeFolders) Share(_ context.Context, r app.ShareRequest) (app.Folder, error) {
	return app.Folder{Name: r.Name, Node: selfID}, nil
}
func (fakeFolders) SetMembers(_ context.Context, name string, ch folders.MembersChange) (app.Folder, error) {
	if name != "data" {
		return app.Folder{}, app.ErrNotFound
	}
	return app.Folder{Name: name, Node: selfID, Members: ch.Set}, nil
}
func (fakeFolders) Unshare(_ context.Context, name string) error {
	if name != "data" {
		return app.ErrNotFound
	}
	return nil
}

type fakeCopier struct{}

func (fakeCopier) Copy(_ context.Context, r app.CopyRequest) (app.Transfer, error) {
	return app.Transfer{ID: "t-1", Node: selfID, Src: r.Src, Dst: r.Dst, State: "running"}, nil
}
func (fakeCopier) Transfer(_ context.Context, node, id string, wait time.Duration) (app.Transfer, error) {
	return app.Transfer{ID: id, Node: node, State: "done"}, nil
}
func (fakeCopier) Transfers(context.Context) ([]app.Transfer, error) {
	return []app.Transfer{{ID: "t-1", State: "done"}}, nil
}

type fakePolicy struct{}

func (fakePolicy) Policy(context.Context) (app.Policy, error) {
	return app.Policy{Launch: "members"}, nil
}
func (fakePolicy) SetPolicy(_ context.Context, u app.PolicyUpdate) (app.Policy, error) {
	return u.Apply(app.Policy{Launch: "members"}), nil
}

// roundTrip calls a route through the client and the Service directly and
// wants the same answer: the same value, or the same status, code and
// message.
func roundTrip[T any](t *testing.T, viaClient, direct func() (T, error)) {
	t.Helper()
	got, gotErr := viaClient()
	want, wantErr := direct()
	if wantErr != nil {
		status, body := web.Encode(wantErr)
		var apiErr *app.APIError
		if !errors.As(gotErr, &apiErr) || apiErr.Status != status || apiErr.Code != body.Code || apiErr.Message != body.Message {
			t.Errorf("through the client: %#v, want %d %+v", gotErr, status, body)
		}
		return
	}
	if gotErr != nil {
		t.Fatalf("through the client: %v, want %+v", gotErr, want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("through the client (-direct +client):\n%s", diff)
	}
}

// noValue adapts a call that returns only an error.
func noValue(f func() error) func() (struct{}, error) {
	return func() (struct{}, error) { return struct{}{}, f() }
}

// readAll adapts a streamed reply.
func readAll(f func() (io.ReadCloser, error)) func() (string, error) {
	return func() (string, error) {
		rc, err := f()
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
}

// TestRoundTripEveryRoute calls every route of web.Routes through the client
// and a handler over a Service (a real replica, fakes for the nodes and the
// daemon's parts), and wants what the Service itself answers.
func TestRoundTripEveryRoute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, self := newReplica(t)
	pool := &fakePool{
		status: func() (app.PoolStatus, error) {
			return app.PoolStatus{PoolID: "pool-1", Members: []app.Member{{ID: selfID}, {ID: peerID}}}, nil
		},
		create: func(r app.CreateRequest) (app.JoinCode, error) {
			return app.JoinCode{PoolID: "pool-1", Code: "C0DE", Invite: app.Invite{CreatedBy: r.As}}, nil
		},
		device: func(r app.AddDeviceRequest) (app.DeviceCode, error) {
			if r.For != "" && r.For != "alice" {
				return app.DeviceCode{}, &app.APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "out of role: only a person's own devices, or an admin or owner who may manage them, add a device to them"}
			}
			return app.DeviceCode{Code: "C0DE", Person: "alice", Invite: app.Invite{Uses: 1}}, nil
		},
		merge: func(r app.MergeRequest) error {
			if r.Who != "bob-laptop" {
				return app.ErrNotFound
			}
			return nil
		},
		remove: func(id string) error {
			if id != peerID {
				return app.ErrNotFound
			}
			return nil
		},
		readmit: func(id string) error {
			if id != peerID {
				return &app.APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "only admins and owners readmit"}
			}
			return nil
		},
		probe: func(addr string) (app.ProbeResult, error) { return app.ProbeResult{Addr: addr, ID: peerID}, nil },
	}
	svc, err := app.New(app.Deps{DB: db, Self: self, Live: allOnline{}, Pool: pool, Nodes: fakeNode{},
		Folders: fakeFolders{}, Copier: fakeCopier{}, Policy: fakePolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	c := web.NewClient(serveUnix(t, newHandler(svc)))
	spec := app.LaunchRequest{Spec: jobs.Spec{Name: "train", Image: "cuda:12", GPUs: 1}}
	launch := "members"

	cases := map[string]func(t *testing.T){
		"GET /api/v1/self": func(t *testing.T) {
			roundTrip(t, func() (app.Self, error) { return c.Self(ctx) }, func() (app.Self, error) { return svc.Self(ctx) })
		},
		"GET /api/v1/version": func(t *testing.T) {
			roundTrip(t, func() (app.Version, error) {
				return web.Call[app.Version](ctx, c, http.MethodGet, "/api/v1/version", nil)
			}, func() (app.Version, error) { return svc.Version(ctx) })
		},
		"GET /api/v1/nodes": func(t *testing.T) {
			roundTrip(t, func() ([]app.Node, error) { return c.Nodes(ctx) }, func() ([]app.Node, error) { return svc.Nodes(ctx) })
		},
		"GET /api/v1/gpus": func(t *testing.T) {
			roundTrip(t, func() ([]app.GPU, error) { return c.GPUs(ctx) }, func() ([]app.GPU, error) { return svc.GPUs(ctx) })
		},
		"POST /api/v1/gpus/{ref}/clear": func(t *testing.T) {
			for _, ref := range []string{selfID + ":1", "nobody:1", "no-index"} {
				roundTrip(t, func() (app.GPUClear, error) { return c.ClearGPU(ctx, ref) }, func() (app.GPUClear, error) { return svc.ClearGPU(ctx, ref) })
			}
		},
		"GET /api/v1/history": func(t *testing.T) {
			roundTrip(t, func() (app.History, error) { return c.History(ctx, peerID, 60) }, func() (app.History, error) { return svc.History(ctx, peerID, 60) })
		},
		"GET /api/v1/report": func(t *testing.T) {
			for _, req := range []app.ReportRequest{{Since: 3600, Until: 1_700_000_000, By: "member"}, {Since: 60, By: "nobody"}} {
				roundTrip(t, func() (app.Report, error) { return c.Report(ctx, req) }, func() (app.Report, error) { return svc.Report(ctx, req) })
			}
		},
		"GET /api/v1/pool": func(t *testing.T) {
			roundTrip(t, func() (app.PoolStatus, error) { return c.Pool(ctx) }, func() (app.PoolStatus, error) { return svc.Pool(ctx) })
		},
		"POST /api/v1/pool/create": func(t *testing.T) {
			roundTrip(t, func() (app.JoinCode, error) { return c.CreatePool(ctx, app.CreateRequest{As: "alice"}) }, func() (app.JoinCode, error) { return svc.CreatePool(ctx, app.CreateRequest{As: "alice"}) })
			// A client of before posts no body: the daemon's default name.
			roundTrip(t, func() (app.JoinCode, error) {
				return web.Call[app.JoinCode](ctx, c, http.MethodPost, "/api/v1/pool/create", nil)
			}, func() (app.JoinCode, error) { return svc.CreatePool(ctx, app.CreateRequest{}) })
		},
		"POST /api/v1/pool/devices": func(t *testing.T) {
			for _, req := range []app.AddDeviceRequest{{}, {For: "alice"}, {For: "carol"}} {
				roundTrip(t, func() (app.DeviceCode, error) { return c.AddDevice(ctx, req) }, func() (app.DeviceCode, error) { return svc.AddDevice(ctx, req) })
			}
		},
		"POST /api/v1/pool/merge": func(t *testing.T) {
			for _, who := range []string{"bob-laptop", "nobody", ""} {
				roundTrip(t, noValue(func() error { return c.MergePeople(ctx, who, "bob") }), noValue(func() error { return svc.MergePeople(ctx, app.MergeRequest{Who: who, Into: "bob"}) }))
			}
		},
		"POST /api/v1/pool/join": func(t *testing.T) {
			req := app.JoinRequest{Code: "C0DE", Addr: "10.0.0.2:7420"}
			roundTrip(t, func() (app.PoolStatus, error) { return c.JoinPool(ctx, req) }, func() (app.PoolStatus, error) { return svc.JoinPool(ctx, req) })
		},
		"DELETE /api/v1/pool/members/{id}": func(t *testing.T) {
			roundTrip(t, noValue(func() error { return c.RemoveMember(ctx, peerID) }), noValue(func() error { return svc.RemoveMember(ctx, peerID) }))
			roundTrip(t, noValue(func() error { return c.RemoveMember(ctx, "nobody") }), noValue(func() error { return svc.RemoveMember(ctx, "nobody") }))
		},
		"POST /api/v1/pool/members/{id}/readmit": func(t *testing.T) {
			roundTrip(t, noValue(func() error { return c.ReadmitMember(ctx, peerID) }), noValue(func() error { return svc.ReadmitMember(ctx, peerID) }))
			roundTrip(t, noValue(func() error { return c.ReadmitMember(ctx, "nobody") }), noValue(func() error { return svc.ReadmitMember(ctx, "nobody") }))
		},
		"PUT /api/v1/pool/members/{id}/role": func(t *testing.T) {
			roundTrip(t, noValue(func() error { return c.SetRole(ctx, peerID, "admin") }), noValue(func() error { return svc.SetRole(ctx, peerID, "admin") }))
		},
		"GET /api/v1/pool/invites": func(t *testing.T) {
			roundTrip(t, func() ([]app.Invite, error) { return c.Invites(ctx) }, func() ([]app.Invite, error) { return svc.Invites(ctx) })
		},
		"POST /api/v1/pool/invites": func(t *testing.T) {
			req := app.InviteRequest{Role: "member", Uses: 2}
			roundTrip(t, func() (app.NewInvite, error) { return c.CreateInvite(ctx, req) }, func() (app.NewInvite, error) { return svc.CreateInvite(ctx, req) })
		},
		"DELETE /api/v1/pool/invites/{id}": func(t *testing.T) {
			roundTrip(t, noValue(func() error { return c.RevokeInvite(ctx, "inv-1") }), noValue(func() error { return svc.RevokeInvite(ctx, "inv-1") }))
		},
		"POST /api/v1/probe": func(t *testing.T) {
			roundTrip(t, func() (app.ProbeResult, error) { return c.Probe(ctx, "10.0.0.2:7420") }, func() (app.ProbeResult, error) { return svc.Probe(ctx, "10.0.0.2:7420") })
		},
		"GET /api/v1/events": func(t *testing.T) {
			got := make(chan string, 1)
			ectx, stop := context.WithCancel(ctx)
			defer stop()
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.Events(ectx, func(name string, _ json.RawMessage) {
					select {
					case got <- name:
					default:
					}
				})
			}()
			for {
				svc.Hub().Emit(app.EventNodes, []app.Node{})
				select {
				case name := <-got:
					if name != app.EventNodes {
						t.Errorf("event %q, want %q", name, app.EventNodes)
					}
					stop()
					<-done
					return
				case <-time.After(50 * time.Millisecond):
				case <-ctx.Done():
					t.Fatal("no event arrived")
				}
			}
		},
		"GET /api/v1/jobs": func(t *testing.T) {
			roundTrip(t, func() ([]app.Job, error) { return c.Jobs(ctx, true) }, func() ([]app.Job, error) { return svc.Jobs(ctx, true) })
		},
		"POST /api/v1/jobs": func(t *testing.T) {
			roundTrip(t, func() (app.Job, error) { return c.Launch(ctx, spec) }, func() (app.Job, error) { return svc.Launch(ctx, spec) })
		},
		"POST /api/v1/jobs/plan": func(t *testing.T) {
			roundTrip(t, func() (app.Plan, error) { return c.Plan(ctx, spec) }, func() (app.Plan, error) { return svc.Plan(ctx, spec) })
		},
		"GET /api/v1/jobs/{id}": func(t *testing.T) {
			roundTrip(t, func() (app.Job, error) { return c.Job(ctx, "job-1") }, func() (app.Job, error) { return svc.Job(ctx, "job-1") })
		},
		"POST /api/v1/jobs/{id}/stop": func(t *testing.T) {
			roundTrip(t, func() (app.Job, error) { return c.StopJob(ctx, "job-1") }, func() (app.Job, error) { return svc.StopJob(ctx, "job-1") })
		},
		"DELETE /api/v1/jobs/{id}": func(t *testing.T) {
			roundTrip(t, noValue(func() error { return c.RemoveJob(ctx, app.RemoveRequest{Ref: "job-1"}) }), noValue(func() error { return svc.RemoveJob(ctx, app.RemoveRequest{Ref: "job-1"}) }))
			roundTrip(t, noValue(func() error { return c.RemoveJob(ctx, app.RemoveRequest{Ref: "job-1", Force: true}) }), noValue(func() error { return svc.RemoveJob(ctx, app.RemoveRequest{Ref: "job-1", Force: true}) }))
		},
		"GET /api/v1/jobs/{id}/logs": func(t *testing.T) {
			roundTrip(t, readAll(func() (io.ReadCloser, error) { return c.Logs(ctx, "job-1", false, 10) }),
				readAll(func() (io.ReadCloser, error) { return svc.Logs(ctx, "job-1", false, 10) }))
		},
		"GET /api/v1/jobs/{id}/stats": func(t *testing.T) {
			roundTrip(t, func() (jobs.Stats, error) { return c.JobStats(ctx, "job-1") }, func() (jobs.Stats, error) { return svc.JobStats(ctx, "job-1") })
		},
		"POST /api/v1/jobs/{id}/open": func(t *testing.T) {
			roundTrip(t, func() (app.Tunnel, error) { return c.Open(ctx, "job-1", 8888) }, func() (app.Tunnel, error) { return svc.Open(ctx, "job-1", 8888) })
		},
		"GET /api/v1/tunnels": func(t *testing.T) {
			roundTrip(t, func() ([]app.Tunnel, error) { return c.TunnelList(ctx) }, func() ([]app.Tunnel, error) { return svc.TunnelList(ctx) })
		},
		"GET /api/v1/images": func(t *testing.T) {
			roundTrip(t, func() ([]containers.Image, error) { return c.Images(ctx, "") }, func() ([]containers.Image, error) { return svc.Images(ctx, "") })
		},
		"POST /api/v1/images/load": func(t *testing.T) {
			roundTrip(t, readAll(func() (io.ReadCloser, error) { return c.LoadImage(ctx, "", strings.NewReader("tar"), true) }),
				readAll(func() (io.ReadCloser, error) { return svc.LoadImage(ctx, "", strings.NewReader("tar"), true) }))
		},
		"POST /api/v1/images/pull": func(t *testing.T) {
			req := app.PullRequest{Ref: "cuda:12"}
			roundTrip(t, readAll(func() (io.ReadCloser, error) { return c.PullImage(ctx, req) }),
				readAll(func() (io.ReadCloser, error) { return svc.PullImage(ctx, req) }))
		},
		"GET /api/v1/history/series": func(t *testing.T) {
			gpu := 0
			for _, q := range []app.SeriesQuery{{Node: peerID, Since: 600}, {Node: peerID, GPU: &gpu, Since: 600}, {Node: peerID, Since: 0}} {
				roundTrip(t, func() (app.Series, error) { return c.Series(ctx, q) }, func() (app.Series, error) { return svc.Series(ctx, q) })
			}
		},
		"GET /api/v1/history/pool": func(t *testing.T) {
			roundTrip(t, func() (app.PoolSeries, error) { return c.PoolHistory(ctx, 600) }, func() (app.PoolSeries, error) { return svc.PoolHistory(ctx, 600) })
		},
		"GET /api/v1/folders": func(t *testing.T) {
			roundTrip(t, func() ([]app.Folder, error) { return c.Folders(ctx) }, func() ([]app.Folder, error) { return svc.Folders(ctx) })
		},
		"POST /api/v1/folders": func(t *testing.T) {
			req := app.ShareRequest{Name: "data", Path: "/srv/data", ReadWrite: true}
			roundTrip(t, func() (app.Folder, error) { return c.Share(ctx, req) }, func() (app.Folder, error) { return svc.Share(ctx, req) })
		},
		"DELETE /api/v1/folders/{name}": func(t *testing.T) {
			roundTrip(t, noValue(func() error { return c.Unshare(ctx, "data") }), noValue(func() error { return svc.Unshare(ctx, "data") }))
			roundTrip(t, noValue(func() error { return c.Unshare(ctx, "other") }), noValue(func() error { return svc.Unshare(ctx, "other") }))
		},
		"PUT /api/v1/folders/{name}/members": func(t *testing.T) {
			for _, req := range []app.FolderMembersRequest{{Name: "data"}, {Name: "other"}, {Name: "data", Members: []string{"nobody-here"}}} {
				roundTrip(t, func() (app.Folder, error) { return c.SetFolderMembers(ctx, req) }, func() (app.Folder, error) { return svc.SetFolderMembers(ctx, req) })
			}
		},
		"GET /api/v1/ls": func(t *testing.T) {
			roundTrip(t, func() (any, error) { return c.Ls(ctx, selfID, "data", "/") }, func() (any, error) { return svc.Ls(ctx, selfID, "data", "/") })
		},
		"POST /api/v1/copy": func(t *testing.T) {
			req := app.CopyRequest{Src: "self:data/a", Dst: "peer:data/"}
			roundTrip(t, func() (app.Transfer, error) { return c.Copy(ctx, req) }, func() (app.Transfer, error) { return svc.Copy(ctx, req) })
		},
		"GET /api/v1/transfers": func(t *testing.T) {
			roundTrip(t, func() ([]app.Transfer, error) { return c.Transfers(ctx) }, func() ([]app.Transfer, error) { return svc.Transfers(ctx) })
		},
		"GET /api/v1/transfers/{id}": func(t *testing.T) {
			roundTrip(t, func() (app.Transfer, error) { return c.Transfer(ctx, peerID, "t-1", time.Second) },
				func() (app.Transfer, error) { return svc.Transfer(ctx, peerID, "t-1", time.Second) })
		},
		"GET /api/v1/alerts": func(t *testing.T) {
			for _, since := range []int{0, 3600, -1} {
				roundTrip(t, func() ([]app.Alert, error) { return c.Alerts(ctx, since) }, func() ([]app.Alert, error) { return svc.Alerts(ctx, since) })
			}
		},
		"GET /api/v1/alerts/rules": func(t *testing.T) {
			for _, node := range []string{"", selfID, "nobody"} {
				roundTrip(t, func() ([]app.AlertRule, error) { return c.AlertRules(ctx, node) }, func() ([]app.AlertRule, error) { return svc.AlertRules(ctx, node) })
			}
		},
		"PUT /api/v1/alerts/rules/{id}": func(t *testing.T) {
			th := 90.0
			req := app.AlertRuleRequest{ID: "gpu-temp", AlertRuleUpdate: app.AlertRuleUpdate{Threshold: &th}}
			roundTrip(t, func() (app.AlertRuleChange, error) { return c.SetAlertRule(ctx, req) }, func() (app.AlertRuleChange, error) { return svc.SetAlertRule(ctx, req) })
		},
		"POST /api/v1/alerts/mute": func(t *testing.T) {
			for _, req := range []app.MuteRequest{{ID: "nope", Seconds: 60}, {Node: selfID, Rule: "gpu-temp", Seconds: 60}, {Seconds: 60}} {
				roundTrip(t, func() (app.AlertMute, error) { return c.MuteAlert(ctx, req) }, func() (app.AlertMute, error) { return svc.MuteAlert(ctx, req) })
			}
		},
		"GET /api/v1/alerts/mutes": func(t *testing.T) {
			for _, node := range []string{"", selfID, "nobody"} {
				roundTrip(t, func() (app.AlertMutes, error) { return c.AlertMutes(ctx, node) }, func() (app.AlertMutes, error) { return svc.AlertMutes(ctx, node) })
			}
		},
		"PUT /api/v1/alerts/pins/{rule}": func(t *testing.T) {
			for _, req := range []app.PinRequest{{Rule: "gpu-temp", Pinned: true}, {Rule: "gpu-temp", Node: peerID, Pinned: true}, {Rule: "gpu-temp"}} {
				roundTrip(t, func() ([]string, error) { return c.PinAlert(ctx, req) }, func() ([]string, error) { return svc.PinAlert(ctx, req) })
			}
		},
		"GET /api/v1/alerts/webhook": func(t *testing.T) {
			roundTrip(t, func() (app.AlertWebhook, error) { return c.AlertWebhook(ctx) }, func() (app.AlertWebhook, error) { return svc.AlertWebhook(ctx) })
		},
		"PUT /api/v1/alerts/webhook": func(t *testing.T) {
			for _, u := range []string{"https://chat.example.org/h", "file:/etc/passwd"} {
				req := app.WebhookRequest{URL: u}
				roundTrip(t, func() (app.Applied, error) { return c.SetAlertWebhook(ctx, req) }, func() (app.Applied, error) { return svc.SetAlertWebhook(ctx, req) })
			}
		},
		"GET /api/v1/reservations": func(t *testing.T) {
			roundTrip(t, func() ([]app.Reservation, error) { return c.Reservations(ctx) }, func() ([]app.Reservation, error) { return svc.Reservations(ctx) })
		},
		"POST /api/v1/reservations": func(t *testing.T) {
			req := app.ReserveRequest{Node: peerID, GPUs: 2, From: time.Date(2030, 1, 2, 14, 0, 0, 0, time.UTC), Seconds: 3 * 3600}
			roundTrip(t, func() (app.Reservation, error) { return c.Reserve(ctx, req) }, func() (app.Reservation, error) { return svc.Reserve(ctx, req) })
		},
		"DELETE /api/v1/reservations/{id}": func(t *testing.T) {
			roundTrip(t, func() (app.Reservation, error) { return c.Unreserve(ctx, "rsv-0123456789ab") }, func() (app.Reservation, error) { return svc.Unreserve(ctx, "rsv-0123456789ab") })
		},
		"GET /api/v1/lend": func(t *testing.T) {
			svc.SetLending(nil) // a machine that runs no jobs lends nothing: not_found
			roundTrip(t, func() (app.LendState, error) { return c.Lend(ctx) }, func() (app.LendState, error) { return svc.Lend(ctx) })
			svc.SetLending(lend.New(lend.DefaultConfig(), lend.DefaultPolicy(), nil, nil))
			roundTrip(t, func() (app.LendState, error) { return c.Lend(ctx) }, func() (app.LendState, error) { return svc.Lend(ctx) })
		},
		"PUT /api/v1/lend/using": func(t *testing.T) {
			svc.SetLending(lend.New(lend.DefaultConfig(), lend.DefaultPolicy(), nil, nil))
			u := app.LendUsing{Using: true}
			roundTrip(t, func() (app.LendState, error) { return c.SetLendUsing(ctx, u) }, func() (app.LendState, error) { return svc.SetLendUsing(ctx, u) })
		},
		"GET /api/v1/policy": func(t *testing.T) {
			roundTrip(t, func() (app.Policy, error) { return c.Policy(ctx) }, func() (app.Policy, error) { return svc.Policy(ctx) })
		},
		"PUT /api/v1/policy": func(t *testing.T) {
			u := app.PolicyUpdate{Launch: &launch}
			roundTrip(t, func() (app.Policy, error) { return c.SetPolicy(ctx, u) }, func() (app.Policy, error) { return svc.SetPolicy(ctx, u) })
		},
	}
	for _, rt := range web.Routes {
		name := rt.Method + " " + rt.Path
		test, ok := cases[name]
		if !ok {
			t.Errorf("route %s has no round trip: add one", name)
			continue
		}
		delete(cases, name)
		t.Run(name, test)
	}
	for name := range cases {
		t.Errorf("round trip %s has no route", name)
	}
}
