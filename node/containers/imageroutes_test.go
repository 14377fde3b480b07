package containers

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// TestImageRoundTrip calls every route of ImageRoutes through ImageClient
// and the real handler over a fake engine, and wants what the engine
// answers, the progress lines included.
func TestImageRoundTrip(t *testing.T) {
	f := &fakeImages{
		loadFn: func(r io.Reader, rights Rights, p Progress) ([]string, error) {
			b, _ := io.ReadAll(r)
			p(int64(len(b)), int64(len(b)), "loading")
			return []string{"img:" + string(b)}, nil
		},
		pullFn: func(ref string, force bool, p Progress) error { return nil },
	}
	m := jobs.NewManager(jobs.Config{Node: "NODE"}, nil, nil, nil, nil, discardLog())
	owner := jobs.Caller{ID: "carol", Role: jobs.RoleOwner}
	l := &peerapitest.Loopback{Handler: ImageHandler(f, m, func(*http.Request) jobs.Caller { return owner })}
	lines := func(t *testing.T, rc io.ReadCloser, err error) []progressLine {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return progressLines(t, string(b))
	}
	peerapitest.RoundTrip(t, ImageRoutes, l, map[string]func(*testing.T, peerapi.Conn){
		"GET /v1/images": func(t *testing.T, c peerapi.Conn) {
			got, err := ImageClient{c}.Images(t.Context())
			want, _ := f.Images(t.Context())
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("Images = %+v, %v; want %+v", got, err, want)
			}
		},
		"POST /v1/images/load": func(t *testing.T, c peerapi.Conn) {
			rc, err := ImageClient{c}.Load(t.Context(), strings.NewReader("TAR"), true)
			ps := lines(t, rc, err)
			if len(ps) != 2 || ps[0].Done != 3 || ps[1].Tags[0] != "img:TAR" || f.callList() != "Images,Images,LoadImage force=true" {
				t.Errorf("Load: %+v, calls %s", ps, f.callList())
			}
		},
		"POST /v1/images/pull": func(t *testing.T, c peerapi.Conn) {
			rc, err := ImageClient{c}.Pull(t.Context(), "registry.example:5000/busybox:1", false)
			ps := lines(t, rc, err)
			if len(ps) != 1 || ps[0].Status != "pulled registry.example:5000/busybox:1" {
				t.Errorf("Pull: %+v", ps)
			}
			if _, err := (ImageClient{c}).Pull(t.Context(), "", false); err == nil {
				t.Error("Pull of no ref: no refusal")
			}
		},
	})
}
