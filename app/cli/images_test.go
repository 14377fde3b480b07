package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/containers"
)

// TestImagesOnLaptop: `labpool images` on a machine that runs no
// containers (a laptop) lists the images of the machines that do, as the
// Launch dialog does; it used to fail with "its Docker engine is not
// reachable". --node still asks one machine.
func TestImagesOnLaptop(t *testing.T) {
	dir := t.TempDir()
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/v1/self", func(w http.ResponseWriter, r *http.Request) {
		js(w, app.Self{ID: selfID, Name: "laptop", APIVersion: app.APIVersion})
	})
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		js(w, []app.Node{
			{ID: selfID, Name: "laptop", Self: true, Online: true, ContainersError: "its Docker engine is not reachable"},
			{ID: "GPU1-FULL", Name: "gpu1", Online: true, Containers: true},
			{ID: "OFF-FULL", Name: "off", Containers: true},
		})
	})
	mux.HandleFunc("GET /api/v1/images", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("node") != "GPU1-FULL" {
			httperr.Write(w, http.StatusServiceUnavailable, "unavailable", "this machine cannot run containers: its Docker engine is not reachable")
			return
		}
		js(w, []containers.Image{{ID: "sha256:0123456789abcdef", Tags: []string{"pytorch:2.4"}, Size: 1 << 30, Created: time.Now()}})
	})
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, mux)

	code, out, errOut := run(t, Hooks{}, "--data", dir, "images")
	if code != ExitOK || !strings.Contains(out, "gpu1") || !strings.Contains(out, "pytorch:2.4") || strings.Contains(out, "off") {
		t.Errorf("images on a laptop: exit %d, stdout %q, stderr %q; want gpu1's images", code, out, errOut)
	}
	if !strings.Contains(errOut, "runs no containers") {
		t.Errorf("stderr %q; want a note that this machine runs no containers", errOut)
	}
	code, _, errOut = run(t, Hooks{}, "--data", dir, "images", "--node", "laptop")
	if code == ExitOK || !strings.Contains(errOut, "not reachable") {
		t.Errorf("images --node laptop: exit %d, stderr %q; want the laptop's own refusal", code, errOut)
	}
}
