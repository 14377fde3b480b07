package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// echoNode is a node's agent API that allows access to any job and echoes
// what a tunnel sends, line by line, until the tunnel closes.
func echoNode(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/{id}/access", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /v1/jobs/{id}/tunnel", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			w.Write(append(sc.Bytes(), '\n'))
			rc.Flush()
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// nodeAt is a NodeCaller that reaches every node at srv.
type nodeAt struct{ srv *httptest.Server }

func (n nodeAt) NodeClient(context.Context, string) (*http.Client, error) {
	tr := n.srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.ServerName = "example.com"
	tr.DialTLSContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d tls.Dialer
		d.Config = tr.TLSClientConfig
		return d.DialContext(ctx, network, n.srv.Listener.Addr().String())
	}
	return &http.Client{Transport: tr}, nil
}

func TestTunnelsRunWaitsForConnections(t *testing.T) {
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
	done := make(chan error, 1)
	go func() { done <- svc.Tunnels().Run(ctx) }()

	tn, err := svc.Open(ctx, "web", 8080)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	addr := tn.URL[len("http://") : len(tn.URL)-1]
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "hello\n")
	if line, err := bufio.NewReader(c).ReadString('\n'); line != "hello\n" {
		t.Fatalf("through the tunnel: %q, %v; want the echo", line, err)
	}

	cancel() // with the connection still open
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx was cancelled with a connection open")
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the tunnel's connection is still open after Run returned")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the tunnel still listens after Run returned")
	}
	if _, err := svc.Open(context.Background(), "web", 8080); err == nil {
		t.Error("Open after Run returned: no error")
	}
}
