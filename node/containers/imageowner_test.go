//go:build linux

package containers

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/labpool/labpool/node/jobs"
)

// notFound is the engine's answer for a name or ID it does not have.
type notFound struct{ ref string }

func (e notFound) Error() string { return "no such image: " + e.ref }
func (notFound) NotFound()       {}

// imageEngine is an engine's image store in memory: it loads an archive as
// the engine does, applying the RepoTags of its manifest.json itself.
type imageEngine struct {
	dockerAPI
	mu   sync.Mutex        // guards tags and ids
	tags map[string]string // familiar tag -> image ID
	ids  map[string]bool   // every image, tagged or not
}

func newImageEngine() *imageEngine {
	return &imageEngine{tags: map[string]string{}, ids: map[string]bool{}}
}

func (e *imageEngine) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []image.Summary{}
	for _, id := range slices.Sorted(maps.Keys(e.ids)) {
		s := image.Summary{ID: id}
		for t, of := range e.tags {
			if of == id {
				s.RepoTags = append(s.RepoTags, t)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func (e *imageEngine) ImageLoad(_ context.Context, in io.Reader, _ ...client.ImageLoadOption) (image.LoadResponse, error) {
	tr := tar.NewReader(in)
	var lines []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return image.LoadResponse{}, err
		}
		if hdr.Name != "manifest.json" {
			continue
		}
		var ms []struct {
			Config   string
			RepoTags []string
		}
		if err := json.NewDecoder(tr).Decode(&ms); err != nil {
			return image.LoadResponse{}, err
		}
		e.mu.Lock()
		for _, m := range ms {
			id := configID(m.Config)
			e.ids[id] = true
			for _, t := range m.RepoTags {
				e.tags[familiar(t)] = id
				lines = append(lines, `{"stream":"Loaded image: `+t+`\n"}`)
			}
			if len(m.RepoTags) == 0 {
				lines = append(lines, `{"stream":"Loaded image ID: `+id+`\n"}`)
			}
		}
		e.mu.Unlock()
	}
	return image.LoadResponse{Body: io.NopCloser(strings.NewReader(strings.Join(lines, "\n")))}, nil
}

func (e *imageEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id, ok := e.tags[familiar(ref)]
	if !ok && e.ids[ref] {
		id, ok = ref, true
	}
	if !ok {
		return image.InspectResponse{}, notFound{ref}
	}
	r := image.InspectResponse{ID: id}
	for t, of := range e.tags {
		if of == id {
			r.RepoTags = append(r.RepoTags, t)
		}
	}
	return r, nil
}

func (e *imageEngine) ImageTag(_ context.Context, src, tag string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	id, ok := e.tags[familiar(src)]
	if !ok && e.ids[src] {
		id, ok = src, true
	}
	if !ok {
		return notFound{src}
	}
	e.tags[familiar(tag)] = id
	return nil
}

func (e *imageEngine) ImageRemove(_ context.Context, ref string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id, ok := e.tags[familiar(ref)]; ok {
		delete(e.tags, familiar(ref))
		if !slices.Contains(slices.Collect(maps.Values(e.tags)), id) {
			delete(e.ids, id)
		}
		return nil, nil
	}
	if !e.ids[ref] {
		return nil, notFound{ref}
	}
	delete(e.ids, ref)
	return nil, nil
}

// idOf is the image tag names here ("" for none).
func (e *imageEngine) idOf(tag string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tags[familiar(tag)]
}

// savedArchive is a `docker save` archive of one image of content body
// under tags, and that image's ID.
func savedArchive(t *testing.T, body string, tags ...string) ([]byte, string) {
	t.Helper()
	cfg := fmt.Sprintf(`{"architecture":"amd64","os":"linux","config":{},"rootfs":{"type":"layers","diff_ids":[]},"comment":%q}`, body)
	hex := fmt.Sprintf("%x", sha256.Sum256([]byte(cfg)))
	manifest, _ := json.Marshal([]map[string]any{{"Config": hex + ".json", "RepoTags": tags, "Layers": []string{}}})
	return archiveOf(t, entry{name: hex + ".json", body: cfg}, entry{name: "manifest.json", body: string(manifest)}), "sha256:" + hex
}

const (
	bobID   = "BOBB-BOBB-BOBB-BOBB-BOBB-BOBB-BOBB-BOBB-BOBB-BOBB-BOBB-BOBB-BOBB"
	aliceID = "ALIC-ALIC-ALIC-ALIC-ALIC-ALIC-ALIC-ALIC-ALIC-ALIC-ALIC-ALIC-ALIC"
	selfID  = "SELF-SELF-SELF-SELF-SELF-SELF-SELF-SELF-SELF-SELF-SELF-SELF-SELF"
)

// TestMemberSquatsNoHubName is the attack of audit finding 3: a member
// loads an archive tagged with the Docker Hub name the README's example
// runs; the next member's run of that name would run the member's code
// with the victim's environment. A member names images only under its own
// prefix; the machine's owner names anything.
func TestMemberSquatsNoHubName(t *testing.T) {
	const hub = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"
	tests := []struct {
		name    string
		tag     string
		rights  Rights
		allowed bool
	}{
		{"a member, a Hub user's name", hub, Rights{Loader: bobID}, false},
		{"a member, the Hub's full form", "docker.io/" + hub, Rights{Loader: bobID}, false},
		{"a member, an official image", "ubuntu", Rights{Loader: bobID}, false},
		{"a member, an official image's library form", "library/ubuntu:24.04", Rights{Loader: bobID}, false},
		{"a member, a registry host", "registry.example:5000/nvidia/pytorch:24.05-py3", Rights{Loader: bobID}, false},
		{"a member, another member's prefix", MemberPrefix(aliceID) + "tool:1", Rights{Loader: bobID}, false},
		{"a member, the prefix alone", strings.TrimSuffix(MemberPrefix(bobID), "/") + ":1", Rights{Loader: bobID}, false},
		{"a member, a name that only starts like its prefix", MemberPrefix(bobID)[:len(MemberPrefix(bobID))-1] + "x/tool:1", Rights{Loader: bobID}, false},
		{"no loader at all", hub, Rights{}, false},
		{"a member, its own prefix", MemberPrefix(bobID) + "pytorch:2.5.1", Rights{Loader: bobID}, true},
		{"a member, its own prefix through the Hub's form", "docker.io/" + MemberPrefix(bobID) + "tool", Rights{Loader: bobID}, true},
		{"the machine's owner, a Hub name", hub, Rights{Loader: selfID, AnyName: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := newImageEngine()
			r := fakeRuntime(DefaultConfig(), &fakeDocker{})
			r.api = eng
			archive, id := savedArchive(t, "the attacker's code "+tt.name, tt.tag)
			tags, err := r.LoadImage(context.Background(), bytes.NewReader(archive), tt.rights, nil)
			got := eng.idOf(tt.tag)
			if tt.allowed {
				if err != nil || got != id || len(tags) != 1 {
					t.Fatalf("LoadImage = %v, %v; tag on %q; want it loaded as %s", tags, err, got, id)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Rule != ruleOwnPrefix || !strings.Contains(err.Error(), "(rule: "+ruleOwnPrefix+")") {
				t.Errorf("LoadImage = %v, %v; want refused by rule %q", tags, err, ruleOwnPrefix)
			}
			if got != "" {
				t.Errorf("the tag %s names the member's image %s after the refusal", tt.tag, got)
			}
			if imgs, _ := eng.ImageList(context.Background(), image.ListOptions{}); len(imgs) != 0 {
				t.Errorf("the refused image stayed: %+v", imgs)
			}
		})
	}
}

// TestMemberPrefixSaysWhere: the refusal tells the member the name it may
// use.
func TestMemberPrefixSaysWhere(t *testing.T) {
	eng := newImageEngine()
	r := fakeRuntime(DefaultConfig(), &fakeDocker{})
	r.api = eng
	archive, _ := savedArchive(t, "mine", "mytool:1")
	_, err := r.LoadImage(context.Background(), bytes.NewReader(archive), Rights{Loader: bobID}, nil)
	want := MemberPrefix(bobID) + "mytool:1"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "docker.io/library/mytool:1") {
		t.Errorf("refusal %v: want it to name the Hub name it means and %s", err, want)
	}
}

// TestEngineTagsOutsidePrefixUndone: whatever path makes the engine apply
// an archive's own tag (here: the archive loaded as is, past the untag
// step), a name outside the member's prefix is removed and the load
// refused; a tag on an image the load did not bring is no business of the
// guard.
func TestEngineTagsOutsidePrefixUndone(t *testing.T) {
	eng := newImageEngine()
	r := fakeRuntime(DefaultConfig(), &fakeDocker{})
	r.api = eng
	ctx := context.Background()
	archive, id := savedArchive(t, "unvetted", "pytorch/pytorch:2.5.1")
	_, other := savedArchive(t, "the owner's", "ubuntu:24.04")
	_, err := r.guardTags(ctx, Rights{Loader: bobID}, func() ([]string, []string, error) {
		eng.mu.Lock()
		eng.ids[other], eng.tags["ubuntu:24.04"] = true, other // the owner's own docker, meanwhile
		eng.mu.Unlock()
		tags, err := r.load(ctx, bytes.NewReader(archive), nil)
		return tags, []string{id}, err
	})
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Rule != ruleOwnPrefix {
		t.Errorf("unvetted load = %v, want refused by rule %q", err, ruleOwnPrefix)
	}
	if got := eng.idOf("pytorch/pytorch:2.5.1"); got != "" {
		t.Errorf("the squatted tag stayed on %s", got)
	}
	if got := eng.idOf("ubuntu:24.04"); got != other {
		t.Errorf("the owner's own tag went: %q", got)
	}
}

// TestImagesSayWhoLoaded: the listing names who loaded each image through
// the agent, and the record survives a new runtime over the same file; an
// image already here before a member's load keeps no loader.
func TestImagesSayWhoLoaded(t *testing.T) {
	eng := newImageEngine()
	cfg := DefaultConfig()
	cfg.ImageBook = t.TempDir() + "/images.json"
	r := fakeRuntime(cfg, &fakeDocker{})
	r.api = eng
	ctx := context.Background()
	mine, mineID := savedArchive(t, "bobID's", MemberPrefix(bobID)+"tool:1")
	if _, err := r.LoadImage(ctx, bytes.NewReader(mine), Rights{Loader: bobID}, nil); err != nil {
		t.Fatal(err)
	}
	hub, hubID := savedArchive(t, "the hub's", "ubuntu:24.04")
	if _, err := r.LoadImage(ctx, bytes.NewReader(hub), Rights{Loader: selfID, AnyName: true}, nil); err != nil {
		t.Fatal(err)
	}
	// Bob loads an image this engine already has, under his own name.
	again, _ := savedArchive(t, "the hub's", MemberPrefix(bobID)+"ubuntu:24.04")
	if _, err := r.LoadImage(ctx, bytes.NewReader(again), Rights{Loader: bobID}, nil); err != nil {
		t.Fatal(err)
	}
	r2 := fakeRuntime(cfg, &fakeDocker{})
	r2.api = eng
	imgs, err := r2.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, im := range imgs {
		by[im.ID] = im.LoadedBy
	}
	if by[mineID] != bobID || by[hubID] != selfID {
		t.Errorf("loaded by %v; want %s by bobID and %s by the machine", by, mineID, hubID)
	}
}

// TestLaunchSaysWhoLoadedItsImage: a launch that runs an image a member
// loaded says so, naming the member, unless the launcher loaded it or the
// machine's own user did.
func TestLaunchSaysWhoLoadedItsImage(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Node = selfID
	f := &fakeDocker{start: func(string) error { return nil }}
	r := fakeRuntime(cfg, f)
	r.book.set("sha256:bobs", bobID)
	r.book.set("sha256:selfs", selfID)
	e := NewExecutor(r, ExecutorConfig{})
	for _, tt := range []struct {
		image, owner, want string
	}{
		{"sha256:bobs", aliceID, bobID},
		{"sha256:bobs", bobID, ""},
		{"sha256:selfs", aliceID, ""},
		{"sha256:pulled", aliceID, ""},
	} {
		f.imageID = tt.image
		st, err := e.Start(context.Background(), jobs.Task{ID: "0123456789", Name: "j", Owner: tt.owner, Image: "pytorch/pytorch:2.5.1",
			Labels: map[string]string{LabelOwner: tt.owner}})
		if err != nil {
			t.Fatal(err)
		}
		if st.ImageLoadedBy != tt.want {
			t.Errorf("image %s launched by %.4s: loaded by %q, want %q", tt.image, tt.owner, st.ImageLoadedBy, tt.want)
		}
	}
}
