package containers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/stdcopy"
)

// Logs returns the container's output, stdout and stderr together; with
// follow the stream stays open until the container stops or ctx ends.
// tail < 0 means all lines.
func (r *Runtime) Logs(ctx context.Context, id string, follow bool, tail int) (io.ReadCloser, error) {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return nil, err
	}
	t := "all"
	if tail >= 0 {
		t = strconv.Itoa(tail)
	}
	rc, err := r.api.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow, Tail: t})
	if err != nil {
		return nil, explain(err, "")
	}
	if ins.Config != nil && ins.Config.Tty {
		return rc, nil
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	return readCloser{pr, func() error { rc.Close(); return pr.Close() }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// Stats reads the container's CPU and memory use once, and the host PIDs of
// its processes.
func (r *Runtime) Stats(ctx context.Context, id string) (Usage, error) {
	if _, err := r.managed(ctx, id); err != nil {
		return Usage{}, err
	}
	resp, err := r.api.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return Usage{}, explain(err, "")
	}
	defer resp.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return Usage{}, fmt.Errorf("decode stats of %s: %w", id, err)
	}
	u := Usage{CPUPercent: cpuPercent(s), MemLimitBytes: s.MemoryStats.Limit, MemUsedBytes: memUsed(s.MemoryStats)}
	u.PIDs, _ = r.pids(ctx, id)
	return u, nil
}

func cpuPercent(s container.StatsResponse) float64 {
	cpu := float64(s.CPUStats.CPUUsage.TotalUsage) - float64(s.PreCPUStats.CPUUsage.TotalUsage)
	sys := float64(s.CPUStats.SystemUsage) - float64(s.PreCPUStats.SystemUsage)
	n := float64(s.CPUStats.OnlineCPUs)
	if n == 0 {
		n = float64(len(s.CPUStats.CPUUsage.PercpuUsage))
	}
	if cpu <= 0 || sys <= 0 || n == 0 {
		return 0
	}
	return cpu / sys * n * 100
}

// memUsed is what `docker stats` shows: usage less the page cache.
func memUsed(m container.MemoryStats) uint64 {
	cache := m.Stats["inactive_file"]
	if v, ok := m.Stats["total_inactive_file"]; ok {
		cache = v
	}
	if cache < m.Usage {
		return m.Usage - cache
	}
	return m.Usage
}

// pids returns the host PIDs of the container's processes.
func (r *Runtime) pids(ctx context.Context, id string) ([]int, error) {
	top, err := r.api.ContainerTop(ctx, id, []string{"-eo", "pid"})
	if err != nil {
		return nil, err
	}
	col := -1
	for i, t := range top.Titles {
		if strings.EqualFold(t, "PID") {
			col = i
		}
	}
	if col < 0 {
		return nil, errors.New("no PID column in top")
	}
	var out []int
	for _, p := range top.Processes {
		if col < len(p) {
			if pid, err := strconv.Atoi(strings.TrimSpace(p[col])); err == nil {
				out = append(out, pid)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// Images lists the engine's images, newest first.
func (r *Runtime) Images(ctx context.Context) ([]Image, error) {
	sums, err := r.api.ImageList(ctx, image.ListOptions{})
	if err != nil {
		return nil, explain(err, "")
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
	sort.Slice(out, func(i, k int) bool { return out[i].Created.After(out[k].Created) })
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

// LoadImage loads an image archive (docker save format) and returns the
// tags it loaded. progress (may be nil) sees the bytes read from r.
func (r *Runtime) LoadImage(ctx context.Context, archive io.Reader, progress Progress) ([]string, error) {
	counted := &countReader{r: archive, progress: progress}
	resp, err := r.api.ImageLoad(ctx, counted)
	if err != nil {
		return nil, fmt.Errorf("load image: %w", explain(err, ""))
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
		return nil, fmt.Errorf("load image: %w", err)
	}
	if len(tags) == 0 {
		return nil, errors.New("load image: the archive held no image (is it from `docker save`?)")
	}
	return tags, nil
}

// PullImage pulls ref from a registry the engine can reach.
func (r *Runtime) PullImage(ctx context.Context, ref string, progress Progress) error {
	rc, err := r.api.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, explain(err, ref))
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
