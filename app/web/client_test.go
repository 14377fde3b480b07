package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
)

// serveUnix serves h on a unix socket in t's temporary directory and
// returns the socket's path.
func serveUnix(t *testing.T, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "labpool.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, h)
	return sock
}

func TestClientEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := &fakePool{
		create: func(app.CreateRequest) (app.JoinCode, error) {
			return app.JoinCode{PoolID: "pool-1", Code: "C0DE"}, nil
		},
		join: func(r app.JoinRequest) (app.PoolStatus, error) {
			if r.Code != "right" {
				return app.PoolStatus{}, app.ErrForbidden
			}
			return app.PoolStatus{PoolID: "pool-1", Members: []app.Member{{ID: selfID}, {ID: peerID}}}, nil
		},
		remove: func(id string) error {
			if id != peerID {
				return app.ErrNotFound
			}
			return nil
		},
	}
	svc := newService(t, pool)
	c := web.NewClient(serveUnix(t, newHandler(svc)))

	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	self, err := c.Self(ctx)
	if err != nil || self.ID != selfID || self.Name != "self" {
		t.Errorf("Self = %+v, %v", self, err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[0].ID != selfID || nodes[1].ID != peerID || len(nodes[1].GPUs) != 1 {
		t.Errorf("Nodes = %+v, %v", nodes, err)
	}
	gpus, err := c.GPUs(ctx)
	if err != nil || len(gpus) != 2 || gpus[1].NodeName != "peer" {
		t.Errorf("GPUs = %+v, %v", gpus, err)
	}
	h, err := c.History(ctx, peerID, 600)
	if err != nil || h.Node != peerID || len(h.Samples) != 1 {
		t.Errorf("History = %+v, %v", h, err)
	}
	code, err := c.CreatePool(ctx, app.CreateRequest{})
	if err != nil || code.Code != "C0DE" {
		t.Errorf("CreatePool = %+v, %v", code, err)
	}
	ps, err := c.JoinPool(ctx, app.JoinRequest{Code: "right"})
	if err != nil || len(ps.Members) != 2 {
		t.Errorf("JoinPool = %+v, %v", ps, err)
	}
	if err := c.RemoveMember(ctx, peerID); err != nil {
		t.Errorf("RemoveMember: %v", err)
	}

	tests := []struct {
		name    string
		call    func() error
		status  int
		code    string
		message string
	}{
		{"join with a wrong code", func() error {
			_, err := c.JoinPool(ctx, app.JoinRequest{Code: "wrong"})
			return err
		}, 403, "forbidden", app.ErrForbidden.Error()},
		{"join with no code", func() error {
			_, err := c.JoinPool(ctx, app.JoinRequest{})
			return err
		}, 400, "invalid", "invalid request: a join code is required"},
		{"remove a stranger", func() error { return c.RemoveMember(ctx, "x/y") }, 404, "not_found", "not found"},
		{"history with no node", func() error {
			_, err := c.History(ctx, "", 60)
			return err
		}, 400, "invalid", "invalid request: node is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var apiErr *app.APIError
			err := tt.call()
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want an *app.APIError", err, err)
			}
			if apiErr.Status != tt.status || apiErr.Code != tt.code || apiErr.Message != tt.message || err.Error() != tt.message {
				t.Errorf("error = %+v, want %d %s %q", apiErr, tt.status, tt.code, tt.message)
			}
		})
	}
}

func TestClientEvents(t *testing.T) {
	svc := newService(t, nil)
	c := web.NewClient(serveUnix(t, newHandler(svc)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		done <- c.Events(ctx, func(name string, data json.RawMessage) { got <- name + " " + string(data) })
	}()
	deadline := time.After(10 * time.Second)
	for {
		svc.Hub().Emit("hello", 1) // until the stream has subscribed
		select {
		case ev := <-got:
			if ev != "hello 1" {
				t.Errorf("event %q, want %q", ev, "hello 1")
			}
			cancel()
			if err := <-done; err == nil {
				t.Error("Events returned nil after its context ended")
			}
			return
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("no event in 10 s")
		}
	}
}

func TestClientNoDaemon(t *testing.T) {
	ctx := context.Background()
	sock := filepath.Join(t.TempDir(), "labpool.sock")
	c := web.NewClient(sock)
	if err := c.Ping(ctx); !errors.Is(err, web.ErrNoDaemon) {
		t.Errorf("Ping with no socket: %v, want ErrNoDaemon", err)
	}
	if _, err := c.Nodes(ctx); !errors.Is(err, web.ErrNoDaemon) {
		t.Errorf("Nodes with no socket: %v, want ErrNoDaemon", err)
	}
	if err := c.Events(ctx, func(string, json.RawMessage) {}); !errors.Is(err, web.ErrNoDaemon) {
		t.Errorf("Events with no socket: %v, want ErrNoDaemon", err)
	}

	ln, err := net.Listen("unix", sock) // a socket nobody serves any more
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if err := c.Ping(ctx); !errors.Is(err, web.ErrNoDaemon) {
		t.Errorf("Ping of a stale socket: %v, want ErrNoDaemon", err)
	}
}

func TestClientNonJSONError(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "proxy exploded", http.StatusBadGateway)
	})
	c := web.NewClient(serveUnix(t, h))
	_, err := c.Self(context.Background())
	var apiErr *app.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Code != "http" || apiErr.Message != "502 Bad Gateway: proxy exploded" {
		t.Errorf("error = %#v, want an APIError 502 naming the body", err)
	}
}
