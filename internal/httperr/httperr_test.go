package httperr

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWriteRead(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusForbidden, "forbidden", "viewers cannot launch jobs")
	resp := rec.Result()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if got := Read(resp); got != (Body{"forbidden", "viewers cannot launch jobs"}) {
		t.Errorf("read back %+v", got)
	}
	for _, body := range []string{"", "not json", "<html>502</html>", `{"code":1}`, strings.Repeat("x", 10000)} {
		resp := &http.Response{Body: io.NopCloser(strings.NewReader(body))}
		if got := Read(resp); got.Code != "" || got.Message != "" {
			t.Errorf("read %q as %+v, want an empty body", body, got)
		}
	}
}
