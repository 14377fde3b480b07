//go:build linux

package containers

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/labpool/labpool/node/containers/dockertest"
)

// runToEnd runs l and returns its output once it exits.
func runToEnd(t *testing.T, r *Runtime, l Launch) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := r.Run(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, c.ID)
	for c.Running {
		time.Sleep(50 * time.Millisecond)
		if c, err = r.Inspect(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := r.Logs(ctx, c.ID, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out, _ := io.ReadAll(rc)
	return string(out)
}

// TestNoHostRootThroughAShare is the attack of issue 9: a job copies a
// shell into a read-write share and sets its setuid bit, so that any login
// on the host runs it as the file's owner. Checked on the host with stat.
func TestNoHostRootThroughAShare(t *testing.T) {
	r := openRuntime(t)
	if r.RemapsUsers() {
		t.Log("this engine remaps users")
	}
	tests := []struct {
		name      string
		owner     int // of the share's directory
		user      string
		wantOwner uint32
	}{
		{"as the share's owner", 1000, "1000:1000", 1000},
		{"as nobody", 65534, "", 65534},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chown(dir, tt.owner, tt.owner); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o755)
			script := `cp /bin/busybox /out/sh; chmod u+s /out/sh; echo "suid=$?"; chmod g+s /out/sh; echo "sgid=$?"
chmod 6755 /out/sh; echo "both=$?"; mkdir -m 2775 /out/d; echo "mkdir=$?"; touch /out/f; echo "touch=$?"; id`
			l := launch(fmt.Sprintf("lp-suid-%d", time.Now().UnixNano()), "sh", "-c", script)
			l.User = tt.user
			l.Binds = []Bind{{HostPath: dir, Target: "/out"}}
			out := runToEnd(t, r, l)
			t.Logf("job said:\n%s", out)
			for _, want := range []string{"touch=0"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q: the job could not write its share", want)
				}
			}
			for _, bad := range []string{"suid=0", "sgid=0", "both=0", "groups=0", "(root)"} {
				if strings.Contains(out, bad) {
					t.Errorf("output has %q", bad)
				}
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) == 0 {
				t.Fatal("the job wrote nothing into the share")
			}
			for _, e := range entries {
				var st syscall.Stat_t
				p := filepath.Join(dir, e.Name())
				if err := syscall.Lstat(p, &st); err != nil {
					t.Fatal(err)
				}
				if st.Uid == 0 || st.Uid != tt.wantOwner || st.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 {
					t.Errorf("stat %s: uid %d gid %d mode %o: want owner %d and no setuid/setgid bit", e.Name(), st.Uid, st.Gid, st.Mode, tt.wantOwner)
				}
			}
		})
	}
}

// TestRootRefusedWithoutRemap: on an engine that does not remap users,
// root in a container is host root, so it needs the policy's say.
func TestRootRefusedWithoutRemap(t *testing.T) {
	r := openRuntime(t)
	if r.RemapsUsers() {
		t.Skip("this engine remaps users: root in a container is not host root")
	}
	l := launch(fmt.Sprintf("lp-root-%d", time.Now().UnixNano()), "id")
	l.User = "root"
	if _, err := r.Run(context.Background(), l); err == nil || !strings.Contains(err.Error(), "root on the host") {
		t.Errorf("root launch = %v, want a refusal", err)
	}
	l.AllowRoot = true
	out := runToEnd(t, r, l)
	if !strings.Contains(out, "uid=0") {
		t.Errorf("allowed root: %q", out)
	}
}

// TestLoadNeverMovesATag: an archive whose tag names another image here
// loads without touching that tag (no tag or untag event for it), and says
// so; with force it replaces the tag.
func TestLoadNeverMovesATag(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	host := dockertest.Engine(t)
	docker := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("docker", append([]string{"-H", host}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	victim := fmt.Sprintf("labpool-test/victim:%d", time.Now().UnixNano())
	docker("tag", dockertest.Image, victim)
	t.Cleanup(func() { exec.Command("docker", "-H", host, "rmi", victim).Run() })
	want := docker("image", "inspect", "-f", "{{.Id}}", victim)

	// An image of another content, saved under the victim's tag.
	evil := fmt.Sprintf("labpool-test/evil:%d", time.Now().UnixNano())
	imp := exec.Command("docker", "-H", host, "import", "-", evil)
	imp.Stdin = strings.NewReader(tarOf(t, map[string]string{"evil.txt": "not the lab's image"}))
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v: %s", err, out)
	}
	saved, err := exec.Command("docker", "-H", host, "save", evil).Output()
	if err != nil {
		t.Fatal(err)
	}
	evilID := docker("image", "inspect", "-f", "{{.Id}}", evil)
	docker("rmi", evil)
	archive := retag(t, saved, evil, victim)

	evctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, errs := r.api.Events(evctx, events.ListOptions{Filters: filters.NewArgs(filters.Arg("type", "image"))})
	tags, err := r.LoadImage(ctx, bytes.NewReader(archive), Rights{AnyName: true}, nil)
	var taken *TagTakenError
	if !errors.As(err, &taken) || !strings.Contains(err.Error(), "image tag "+victim+" already names another image on this machine; the machine's owner can replace it with --force") {
		t.Fatalf("LoadImage = %v, %v; want the tag refused", tags, err)
	}
	if got := docker("image", "inspect", "-f", "{{.Id}}", victim); got != want {
		t.Fatalf("the tag moved: %s, was %s", got, want)
	}
	settle := time.After(500 * time.Millisecond) // let the events arrive
	for done := false; !done; {
		select {
		case m := <-msgs:
			t.Logf("event %s %s %v", m.Action, m.Actor.ID, m.Actor.Attributes)
			if (m.Action == "tag" || m.Action == "untag") && (m.Actor.ID == want || m.Actor.Attributes["name"] == victim) {
				t.Errorf("event %s %v touched the victim's tag during the load", m.Action, m.Actor.Attributes)
			}
		case err := <-errs:
			t.Fatalf("image events: %v", err)
		case <-settle:
			done = true
		}
	}
	cancel()
	if out, err := exec.Command("docker", "-H", host, "image", "inspect", evilID).CombinedOutput(); err == nil {
		t.Errorf("the refused image stayed, untagged: %s", out[:min(len(out), 200)])
	}
	// A pull does not replace an image loaded here either.
	if err := r.PullImage(ctx, victim, false, nil); !errors.As(err, &taken) {
		t.Errorf("pull over a loaded image: %v, want the tag refused", err)
	}

	// The same image under its own, new name loads and is tagged.
	if tags, err := r.LoadImage(ctx, bytes.NewReader(saved), Rights{AnyName: true}, nil); err != nil || len(tags) != 1 || tags[0] != evil {
		t.Errorf("load under a new tag = %v, %v", tags, err)
	}
	// Loading it again is no replacement.
	if tags, err := r.LoadImage(ctx, bytes.NewReader(saved), Rights{AnyName: true}, nil); err != nil || len(tags) != 1 {
		t.Errorf("load again = %v, %v", tags, err)
	}
	t.Cleanup(func() { exec.Command("docker", "-H", host, "rmi", evil).Run() })
	// Force replaces.
	if tags, err := r.LoadImage(ctx, bytes.NewReader(archive), Rights{Force: true, AnyName: true}, nil); err != nil || len(tags) != 1 || tags[0] != victim {
		t.Errorf("forced load = %v, %v", tags, err)
	}
	if got := docker("image", "inspect", "-f", "{{.Id}}", victim); got != evilID {
		t.Errorf("forced load left the tag on %s, want %s", got, evilID)
	}
}

// retag rewrites the tag from to to in a saved archive's manifest.json and
// repositories.
func retag(t *testing.T, archive []byte, from, to string) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	fromRepo, fromTag, _ := strings.Cut(from, ":")
	toRepo, toTag, _ := strings.Cut(to, ":")
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		switch hdr.Name {
		case "manifest.json":
			body = bytes.ReplaceAll(body, []byte(`"`+from+`"`), []byte(`"`+to+`"`))
		case "repositories":
			var repos map[string]map[string]string
			json.Unmarshal(body, &repos)
			repos[toRepo] = map[string]string{toTag: repos[fromRepo][fromTag]}
			delete(repos, fromRepo)
			body, _ = json.Marshal(repos)
		}
		hdr.Size = int64(len(body))
		tw.WriteHeader(hdr)
		tw.Write(body)
	}
	tw.Close()
	return out.Bytes()
}
