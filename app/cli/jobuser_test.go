package cli

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// TestRWNote: a launch that mounts folders read-write says which user the
// job writes into them as; one with read-only mounts says nothing.
func TestRWNote(t *testing.T) {
	var b strings.Builder
	writeRWNote(&b, []jobs.Mount{{Folder: "datasets", Target: "/data"}}, "gpu1")
	if b.Len() != 0 {
		t.Errorf("read-only mounts: %q", b.String())
	}
	writeRWNote(&b, []jobs.Mount{{Folder: "datasets", Target: "/data"}, {Folder: "results", Target: "/out", ReadWrite: true}}, "gpu1")
	for _, want := range []string{"results on gpu1", "folder's owner", "65534", "belongs to that user"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("note %q does not say %q", b.String(), want)
		}
	}
	if strings.Contains(b.String(), "datasets") {
		t.Errorf("note %q names a read-only folder", b.String())
	}
}

// TestLoaderNote: a launch whose image a member loaded says so, naming
// the member; any other says nothing.
func TestLoaderNote(t *testing.T) {
	for _, tt := range []struct {
		by, want string
	}{
		{"bob", "warning: pytorch/pytorch:2.5.1 on gpu1 is an image that bob loaded onto that machine, not one a registry serves under that name\n"},
		{"", ""},
	} {
		var b strings.Builder
		j := app.Job{NodeName: "gpu1", ImageLoadedByName: tt.by}
		j.Image = "pytorch/pytorch:2.5.1"
		writeLoaderNote(&b, j)
		if b.String() != tt.want {
			t.Errorf("loaded by %q: %q, want %q", tt.by, b.String(), tt.want)
		}
	}
}
