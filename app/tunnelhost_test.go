package app

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// TestTunnelHostIsNotTheUIs: a tunnel listens on, and its URL names, a host
// that is neither 127.0.0.1 nor localhost, where `labpool web` keeps its
// cookie: browsers send a host's cookies to every port of it, so a page
// behind a tunnel on the UI's host would receive the secret.
func TestTunnelHostIsNotTheUIs(t *testing.T) {
	db := openDB(t)
	j := jobs.Job{ID: "job-1", Name: "web", Node: selfID, State: jobs.Running, Ports: map[int]int{8080: 32768}, Created: time.Now()}
	putRecord(t, db, selfID, KindJob, j.ID, time.Now(), mustJSON(t, j))
	stub := stubDaemon{NewReader(db, Self{ID: selfID})}
	svc, err := New(Deps{DB: db, Self: Self{ID: selfID}, Live: fakeLive{}, Pool: stub, Nodes: nodeAt{echoNode(t)},
		Folders: stub, Copier: stub, Policy: stub, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Tunnels().Run(ctx)
	tn, err := svc.Open(ctx, "web", 8080)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	u, err := url.Parse(tn.URL)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Hostname()
	if host == "127.0.0.1" || host == "localhost" {
		t.Fatalf("tunnel URL %s is on the web UI's host %s", tn.URL, host)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Fatalf("tunnel URL %s is not on a loopback address", tn.URL)
	}
	if !IsTunnelHost(host) {
		t.Errorf("IsTunnelHost(%q) = false for the tunnel's own host", host)
	}
	for _, ui := range []string{"127.0.0.1", "localhost", "LOCALHOST"} {
		if IsTunnelHost(ui) {
			t.Errorf("IsTunnelHost(%q) = true: the web UI's host", ui)
		}
	}
}
