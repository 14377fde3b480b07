package app

import (
	"context"
	"errors"
	"sync"
	"unicode/utf8"

	"github.com/labpool/labpool/node/jobs"
)

// logFollows are the logs the window follows, by job; see FollowLogs.
type logFollows struct {
	mu     sync.Mutex // guards cancel
	cancel map[string]context.CancelFunc
}

// Jobs lists jobs: active ones, or all.
func (b *Bindings) Jobs(all bool) ([]Job, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Jobs(ctx, all)
}

// Job returns one job.
func (b *Bindings) Job(id string) (Job, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Job(ctx, id)
}

// PlanLaunch says where req would run and what is free there.
func (b *Bindings) PlanLaunch(req LaunchRequest) (Plan, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Plan(ctx, req)
}

// Launch runs a job.
func (b *Bindings) Launch(req LaunchRequest) (Job, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Launch(ctx, req)
}

// StopJob stops a job.
func (b *Bindings) StopJob(id string) (Job, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.StopJob(ctx, id)
}

// RemoveJob removes an ended job's container.
func (b *Bindings) RemoveJob(id string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.RemoveJob(ctx, id)
}

// JobStats returns a job's resource use.
func (b *Bindings) JobStats(id string) (jobs.Stats, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.JobStats(ctx, id)
}

// OpenJob opens a tunnel to a job's port and the system browser on it.
func (b *Bindings) OpenJob(id string, port int) (Tunnel, error) {
	ctx, cancel := b.call()
	defer cancel()
	t, err := b.client.Open(ctx, id, port)
	if err == nil && b.browse != nil {
		b.browse(t.URL)
	}
	return t, err
}

// Tunnels lists the open tunnels.
func (b *Bindings) Tunnels() ([]Tunnel, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.TunnelList(ctx)
}

// Images lists a machine's images ("" = this one).
func (b *Bindings) Images(node string) ([]jobs.Image, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Images(ctx, node)
}

// FollowLogs streams a job's logs to the page as EventLogs events until the
// job ends or StopLogs is called.
func (b *Bindings) FollowLogs(id string, tail int) error {
	if id == "" {
		return errors.New("which job?")
	}
	ctx, cancel := context.WithCancel(b.ctx)
	b.logs.mu.Lock()
	if b.logs.cancel == nil {
		b.logs.cancel = map[string]context.CancelFunc{}
	}
	if old := b.logs.cancel[id]; old != nil {
		old()
	}
	b.logs.cancel[id] = cancel
	b.logs.mu.Unlock()
	rc, err := b.client.Logs(ctx, id, true, tail)
	if err != nil {
		cancel()
		return err
	}
	go func() {
		defer rc.Close()
		buf := make([]byte, 16<<10)
		var carry []byte
		for {
			n, err := rc.Read(buf)
			chunk := append(carry, buf[:n]...)
			// Send whole UTF-8 characters; keep a split one for the next read.
			cut := len(chunk)
			for cut > 0 && !utf8.Valid(chunk[:cut]) && len(chunk)-cut < utf8.UTFMax {
				cut--
			}
			if cut > 0 {
				b.emit(EventLogs, LogChunk{Job: id, Text: string(chunk[:cut])})
			}
			carry = append([]byte(nil), chunk[cut:]...)
			if err != nil {
				b.emit(EventLogs, LogChunk{Job: id, EOF: true})
				return
			}
		}
	}()
	return nil
}

// StopLogs stops following a job's logs.
func (b *Bindings) StopLogs(id string) {
	b.logs.mu.Lock()
	defer b.logs.mu.Unlock()
	if c := b.logs.cancel[id]; c != nil {
		c()
		delete(b.logs.cancel, id)
	}
}
