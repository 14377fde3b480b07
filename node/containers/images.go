package containers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
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
		out = append(out, Image{ID: s.ID, Tags: tags, Size: s.Size, Created: time.Unix(s.Created, 0)})
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
var ErrBadArchive = errors.New("not an image archive from `docker save`")

// LoadImage loads an image archive (docker save format) and returns the
// tags (or, for untagged images, the IDs) it loaded. progress (may be nil)
// sees the bytes read from archive.
func (r *Runtime) LoadImage(ctx context.Context, archive io.Reader, progress Progress) ([]string, error) {
	counted := &countReader{r: archive, progress: progress}
	resp, err := r.api.ImageLoad(ctx, counted)
	if err != nil {
		return nil, fmt.Errorf("load image: %w", badArchive(explain(err, "")))
	}
	defer resp.Body.Close()
	var tags []string
	err = readMessages(resp.Body, func(m jsonMessage) {
		for _, prefix := range []string{"Loaded image: ", "Loaded image ID: "} {
			if s, ok := strings.CutPrefix(strings.TrimSpace(m.Stream), prefix); ok {
				tags = append(tags, s)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("load image: %w", badArchive(err))
	}
	if len(tags) == 0 {
		return nil, fmt.Errorf("load image: %w: it held no image", ErrBadArchive)
	}
	return tags, nil
}

// archiveFaults are fragments of the engine's complaints about an archive's
// format (a tar without manifest.json or repositories is one the engine
// cannot open).
var archiveFaults = []string{"unexpected EOF", "archive/tar", "manifest.json", "repositories: no such file",
	"json: cannot unmarshal", "invalid character"}

// badArchive marks the engine's complaints about the archive's format.
func badArchive(err error) error {
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
func (r *Runtime) PullImage(ctx context.Context, ref string, progress Progress) error {
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

// countReader reports the bytes read through it.
type countReader struct {
	r        io.Reader
	n        int64
	progress Progress
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(c.n, 0, "")
	}
	return n, err
}
