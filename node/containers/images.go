package containers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Images lists the engine's images, newest first.
func (r *Runtime) Images(ctx context.Context) ([]Image, error) {
	ctx, cancel := r.bounded(ctx)
	defer cancel()
	sums, err := r.api.ImageList(ctx, image.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", explain(err, ""))
	}
	out := make([]Image, 0, len(sums))
	for _, s := range sums {
		tags := []string{}
		for _, t := range s.RepoTags {
			if t != "<none>:<none>" {
				tags = append(tags, t)
			}
		}
		out = append(out, Image{ID: s.ID, Tags: tags, Size: s.Size, Created: time.Unix(s.Created, 0), LoadedBy: r.book.loader(s.ID)})
	}
	slices.SortStableFunc(out, func(a, b Image) int { return b.Created.Compare(a.Created) })
	return out, nil
}

// jsonMessage is one line of Docker's progress stream.
type jsonMessage struct {
	Stream   string `json:"stream"`
	Status   string `json:"status"`
	ID       string `json:"id"`
	Progress *struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	ErrorText string `json:"error"`
}

// ErrBadArchive means an image archive is not what `docker save` writes.
var ErrBadArchive error = &statusError{"not an image archive from `docker save`", http.StatusBadRequest, "invalid"}

// Rights are who loads or pulls, and what they may do beyond giving new
// images names under their own prefix (MemberPrefix): Force replaces a tag
// that names another image; AnyName gives any name (a Docker Hub name, a
// name under a registry host). Both are the machine's owner's (node/jobs
// decides who that is). Loader is the caller's device ID: it names the
// prefix, and the record of who loaded each image (Image.LoadedBy).
type Rights struct {
	Force   bool
	AnyName bool
	Loader  string
}

// LoadImage loads an image archive (docker save format) and returns the
// tags (or, for untagged images, the IDs) it loaded. progress (may be nil)
// sees the bytes read from archive.
//
// The archive is loaded untagged (see untag): the engine applies none of
// its tags, so no name is usable before it is checked. Then each of its
// tags is applied unless it already names another image here (an existing
// tag is never moved, not even for a moment, unless rights.Force) or it
// lies outside the loader's prefix without rights.AnyName. Tags left alone
// make a *TagTakenError, names outside the prefix a *RefusedError; an
// image that got none of its tags is removed again. Whatever else the
// engine did, guardTags undoes. Who loaded each image new to the engine is
// recorded (Image.LoadedBy).
func (r *Runtime) LoadImage(ctx context.Context, archive io.Reader, rights Rights, progress Progress) ([]string, error) {
	return r.guardTags(ctx, rights, func() ([]string, []string, error) {
		return r.loadUntagged(ctx, archive, rights, progress)
	})
}

// loadUntagged is LoadImage without the guard. ids are the images the
// archive holds, as its manifest.json and the engine name them.
func (r *Runtime) loadUntagged(ctx context.Context, archive io.Reader, rights Rights, progress Progress) (tags, ids []string, err error) {
	progress = serialized(progress) // the transfer's goroutine and the engine's stream both report
	counted := &countReader{r: archive, progress: progress}
	var once sync.Once
	received := func() { // once, before the engine's first line
		once.Do(func() {
			if progress != nil {
				n := counted.n.Load()
				progress(n, n, StatusReceived)
			}
		})
	}
	pr, pw := io.Pipe()
	var imgs []archiveImage
	rewritten := make(chan error, 1)
	go func() {
		var err error
		imgs, err = untag(counted, pw)
		if err == nil {
			received() // every byte went through the pipe: the engine has read them
		}
		pw.CloseWithError(err)
		rewritten <- err
	}()
	var engine Progress
	if progress != nil {
		engine = func(done, total int64, status string) { received(); progress(done, total, status) }
	}
	loaded, err := r.load(ctx, pr, engine)
	pr.CloseWithError(errors.New("load ended")) // unblocks the rewriter if the engine stopped reading
	if rerr := <-rewritten; rerr != nil {
		return nil, nil, fmt.Errorf("load image: %w", badArchive(rerr))
	}
	if err != nil {
		return nil, nil, err
	}
	for _, l := range loaded {
		if strings.HasPrefix(l, "sha256:") {
			ids = append(ids, l)
		}
	}
	for _, img := range imgs {
		if img.ID != "" {
			ids = append(ids, img.ID)
		}
	}
	if len(imgs) == 0 { // an archive without manifest.json (Docker before 1.10)
		if len(loaded) == 0 {
			return nil, ids, fmt.Errorf("load image: %w: it held no image", ErrBadArchive)
		}
		return loaded, ids, nil
	}
	tags, err = r.applyTags(ctx, imgs, loaded, rights)
	return tags, ids, err
}

// load sends an archive to the engine and returns what it says it loaded.
// progress (may be nil) sees the engine's own progress: each layer it
// loads, with its bytes done and total and the status "Loading layer ID".
func (r *Runtime) load(ctx context.Context, archive io.Reader, progress Progress) ([]string, error) {
	resp, err := r.api.ImageLoad(ctx, archive)
	if err != nil {
		return nil, fmt.Errorf("load image: %w", badArchive(explain(err, "")))
	}
	defer resp.Body.Close()
	var loaded []string
	err = readMessages(resp.Body, func(m jsonMessage) {
		if progress != nil && m.Progress != nil && m.Progress.Total > 0 {
			progress(m.Progress.Current, m.Progress.Total, strings.TrimSpace(m.Status+" "+m.ID))
		}
		for _, prefix := range []string{"Loaded image: ", "Loaded image ID: "} {
			if s, ok := strings.CutPrefix(strings.TrimSpace(m.Stream), prefix); ok {
				loaded = append(loaded, s)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("load image: %w", badArchive(err))
	}
	return loaded, nil
}

// applyTags gives each loaded image its archive tags, except those naming
// another image here (unless force).
func (r *Runtime) applyTags(ctx context.Context, imgs []archiveImage, loaded []string, rights Rights) ([]string, error) {
	var out, taken, squat []string
	for i, img := range imgs {
		if img.ID == "" && len(imgs) == len(loaded) {
			img.ID = loaded[i] // a config path of an unknown shape: the engine's order
		}
		if img.ID == "" {
			return out, fmt.Errorf("load image: %w: manifest.json names no config digest", ErrBadArchive)
		}
		applied := 0
		for _, tag := range img.Tags {
			ok, err := r.tag(ctx, img.ID, tag, rights)
			switch {
			case errors.Is(err, errSquat):
				squat = append(squat, tag)
			case err != nil:
				return out, err
			case ok:
				out, applied = append(out, tag), applied+1
			default:
				taken = append(taken, tag)
			}
		}
		switch {
		case len(img.Tags) == 0:
			out = append(out, img.ID)
		case applied == 0:
			r.dropUntagged(ctx, img.ID)
		}
	}
	switch {
	case len(squat) > 0:
		return out, ownPrefixRefusal(squat, rights.Loader)
	case len(taken) > 0:
		return out, &TagTakenError{Tags: taken}
	}
	return out, nil
}

// errSquat is tag's answer for a name outside the loader's prefix without
// the right to any name.
var errSquat = errors.New("a name outside the loader's prefix")

// tag points tag at id unless it names another image (rights.Force: even
// then). ok is false when the tag was left alone; errSquat says it lies
// outside the loader's prefix and rights.AnyName is not set.
func (r *Runtime) tag(ctx context.Context, id, tag string, rights Rights) (ok bool, err error) {
	if !rights.mayName(tag) {
		return false, errSquat
	}
	ictx, cancel := r.bounded(ctx)
	defer cancel()
	cur, err := r.api.ImageInspect(ictx, tag)
	switch {
	case err == nil && cur.ID == id:
		return true, nil
	case err == nil && !rights.Force:
		return false, nil
	case err != nil && !client.IsErrNotFound(err):
		return false, fmt.Errorf("load image: read tag %s: %w", tag, explain(err, ""))
	}
	if err := r.api.ImageTag(ictx, id, tag); err != nil {
		return false, fmt.Errorf("load image: tag %s: %w", tag, explain(err, ""))
	}
	return true, nil
}

// dropUntagged removes an image that a load brought in and that got none
// of its tags, if nothing else names or uses it.
func (r *Runtime) dropUntagged(ctx context.Context, id string) {
	ictx, cancel := r.bounded(ctx)
	defer cancel()
	if cur, err := r.api.ImageInspect(ictx, id); err != nil || len(cur.RepoTags) > 0 {
		return
	}
	r.api.ImageRemove(ictx, id, image.RemoveOptions{PruneChildren: true}) // best effort: a container may use it
}

// archiveFaults are fragments of the engine's complaints about an archive's
// format (a tar without manifest.json or repositories is one the engine
// cannot open).
var archiveFaults = []string{"unexpected EOF", "archive/tar", "manifest.json", "repositories: no such file",
	"json: cannot unmarshal", "invalid character"}

// badArchive marks the engine's complaints about the archive's format.
func badArchive(err error) error {
	if errors.Is(err, ErrBadArchive) {
		return err
	}
	msg := err.Error()
	for _, s := range archiveFaults {
		if strings.Contains(msg, s) {
			return fmt.Errorf("%w (%s)", ErrBadArchive, msg)
		}
	}
	return err
}

// PullImage pulls ref from a registry the engine can reach. progress (may
// be nil) sees the bytes of the layers so far and a status line.
//
// A tag that names an image loaded here (one no registry gave: it has no
// repository digest) is not replaced by a pull unless force is set: a pull
// of "lab/tool:1" would otherwise swap the lab's own image for whatever
// the registry serves under that name.
func (r *Runtime) PullImage(ctx context.Context, ref string, force bool, progress Progress) error {
	r.imageMu.Lock()
	defer r.imageMu.Unlock()
	if !force {
		ictx, cancel := r.bounded(ctx)
		cur, err := r.api.ImageInspect(ictx, ref)
		cancel()
		if err == nil && len(cur.RepoDigests) == 0 {
			return fmt.Errorf("pull %s: %w", ref, &TagTakenError{Tags: []string{ref}})
		}
	}
	rc, err := r.api.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, explain(err, ""))
	}
	defer rc.Close()
	layers := map[string][2]int64{}
	err = readMessages(rc, func(m jsonMessage) {
		if progress == nil {
			return
		}
		if m.Progress != nil && m.ID != "" && m.Progress.Total > 0 {
			layers[m.ID] = [2]int64{m.Progress.Current, m.Progress.Total}
		}
		var done, total int64
		for _, l := range layers {
			done, total = done+l[0], total+l[1]
		}
		progress(done, total, strings.TrimSpace(m.ID+" "+m.Status))
	})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	return nil
}

// readMessages decodes Docker's JSON progress lines, returning the first
// error one reports.
func readMessages(r io.Reader, fn func(jsonMessage)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m jsonMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Error != nil && m.Error.Message != "" {
			return errors.New(m.Error.Message)
		}
		if m.ErrorText != "" {
			return errors.New(m.ErrorText)
		}
		fn(m)
	}
	return sc.Err()
}

// StatusReceived is the status of the progress line that says a load's
// archive has arrived whole (done = total = its bytes); the engine's own
// progress follows. Lines before it (status "") count the bytes so far.
const StatusReceived = "received"

// countReader reports the bytes read through it.
type countReader struct {
	r        io.Reader
	n        atomic.Int64
	progress Progress
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	done := c.n.Add(int64(n))
	if c.progress != nil && n > 0 {
		c.progress(done, 0, "")
	}
	return n, err
}

// serialized is p called by one goroutine at a time (nil stays nil).
func serialized(p Progress) Progress {
	if p == nil {
		return nil
	}
	var mu sync.Mutex
	return func(done, total int64, status string) {
		mu.Lock()
		defer mu.Unlock()
		p(done, total, status)
	}
}
