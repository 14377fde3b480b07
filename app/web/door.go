package web

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/app"
)

// LocalOnly are the local API's paths served on the unix socket alone,
// never over `labpool web`: a machine's policy is its owner's, at its console.
var LocalOnly = []string{"/api/v1/policy"}

// Door is what one run of `labpool web` lets in, and the URL that opens it.
type Door struct {
	Guard GuardConfig
	URL   string // http://HOST:PORT/?token=SECRET
}

// NewDoor makes a fresh token for the server asked to listen on addr and
// listening on bound.
func NewDoor(addr string, bound net.Addr) (Door, error) {
	host, _, _ := net.SplitHostPort(addr) // CheckLoopback parsed it
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return Door{}, fmt.Errorf("web address %s: %w", bound, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return Door{}, fmt.Errorf("web address %s: %w", bound, err)
	}
	token, err := NewToken()
	if err != nil {
		return Door{}, err
	}
	return Door{
		Guard: GuardConfig{Token: token, Port: p, Hosts: []string{host}, LocalOnly: LocalOnly},
		URL:   "http://" + net.JoinHostPort(host, port) + "/?token=" + token,
	}, nil
}

// CheckLoopback refuses to serve the UI beyond this machine: its token
// travels in clear HTTP, and the Host check names loopback only.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("web address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("the web UI listens on loopback only (for example 127.0.0.1:7421); reach it from elsewhere through ssh -L")
	}
	if app.IsTunnelHost(host) {
		return fmt.Errorf("refused: %s is where tunnels listen (rule: web_not_tunnel_host: the web UI and the tunnels are "+
			"served on different hosts, so a page behind a tunnel never receives the UI's cookie); use 127.0.0.1 or localhost", host)
	}
	return nil
}

// AttachedHandler serves assets and proxies /api/ to the daemon's socket.
// dataDir, when not "", is that daemon's: while it is stopped the page
// shows its replica's last known pool (LastKnown).
func AttachedHandler(sock, dataDir string, assets fs.FS) http.Handler {
	mux := http.NewServeMux()
	proxy := NewSocketProxy(sock)
	if dataDir != "" {
		proxy = NewSocketProxyOf(sock, dataDir)
	}
	mux.Handle("/api/", proxy)
	mux.Handle("/", http.FileServerFS(assets))
	return mux
}
