//go:build linux && cgo

package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/internal/httperr"
)

func get(t *testing.T, srv *httptest.Server, method, path string, into any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 300 || resp.StatusCode == http.StatusServiceUnavailable {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Errorf("%s %s: decode: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

func TestHandler(t *testing.T) {
	tel, lib := newTelemetry(t, 2)
	lib.Devices[0].Util.Gpu = 93
	srv := httptest.NewServer(Handler(tel))
	defer srv.Close()

	var apiErr httperr.Body
	if code := get(t, srv, "GET", "/v1/node/sample", &apiErr); code != http.StatusServiceUnavailable || apiErr.Code != "no_sample" {
		t.Errorf("GET sample before the first = %d %+v; want 503 no_sample", code, apiErr)
	}
	tel.tick(t.Context())
	want, _ := tel.Latest()
	var s Sample
	if code := get(t, srv, "GET", "/v1/node/sample", &s); code != http.StatusOK {
		t.Fatalf("GET sample = %d", code)
	}
	if diff := cmp.Diff(want, s); diff != "" || s.GPUs[0].UtilPercent != 93 {
		t.Errorf("GET sample (-want +got):\n%s", diff)
	}
	var info Info
	if code := get(t, srv, "GET", "/v1/node/info", &info); code != http.StatusOK {
		t.Fatalf("GET info = %d", code)
	}
	if diff := cmp.Diff(tel.Info(), info); diff != "" {
		t.Errorf("GET info (-want +got):\n%s", diff)
	}
	if code := get(t, srv, "POST", "/v1/node/info", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST info = %d; want 405", code)
	}
	if code := get(t, srv, "GET", "/v1/node/nothing", nil); code != http.StatusNotFound {
		t.Errorf("GET unknown = %d; want 404", code)
	}
}
