package window

import (
	"context"
	"errors"
	"sync"
	"unicode/utf8"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// logFollows are the logs the window follows, by job; see FollowLogs.
type logFollows struct {
	mu     sync.Mutex                     // guards cancel
	cancel map[string]*context.CancelFunc // by job: the follow now running
}

// follow asks Run to follow a job's log; Run answers on started.
type follow struct {
	job     string
	tail    int
	started chan error
}

// Jobs lists jobs: active ones, or all.
func (b *Bindings) Jobs(all bool) ([]app.Job, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Jobs(ctx, all)
}

// Job returns one job.
func (b *Bindings) Job(id string) (app.Job, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Job(ctx, id)
}

// PlanLaunch says where req would run and what is free there.
func (b *Bindings) PlanLaunch(req app.LaunchRequest) (app.Plan, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Plan(ctx, req)
}

// Launch runs a job.
func (b *Bindings) Launch(req app.LaunchRequest) (app.Job, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Launch(ctx, req)
}

// StopJob stops a job.
func (b *Bindings) StopJob(id string) (app.Job, error) {
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
func (b *Bindings) OpenJob(id string, port int) (app.Tunnel, error) {
	ctx, cancel := b.call()
	defer cancel()
	t, err := b.client.Open(ctx, id, port)
	if err == nil {
		select {
		case b.browse <- t.URL:
		case <-b.done:
		}
	}
	return t, err
}

// Tunnels lists the open tunnels.
func (b *Bindings) Tunnels() ([]app.Tunnel, error) {
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
// job ends, StopLogs is called or the window closes.
func (b *Bindings) FollowLogs(id string, tail int) error {
	if id == "" {
		return errors.New("which job?")
	}
	f := follow{job: id, tail: tail, started: make(chan error, 1)}
	select {
	case b.follows <- f:
	case <-b.done:
		return ErrClosed
	}
	return <-f.started
}

// StopLogs stops following a job's logs.
func (b *Bindings) StopLogs(id string) {
	b.logs.mu.Lock()
	defer b.logs.mu.Unlock()
	if c := b.logs.cancel[id]; c != nil {
		(*c)()
		delete(b.logs.cancel, id)
	}
}

// followLogs reads a job's log into the pending events until it ends or
// ctx (Run's, or StopLogs) is cancelled; a new follow of the job ends the
// one before.
func (b *Bindings) followLogs(ctx context.Context, f follow) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mine := &cancel
	b.logs.mu.Lock()
	if b.logs.cancel == nil {
		b.logs.cancel = map[string]*context.CancelFunc{}
	}
	if old := b.logs.cancel[f.job]; old != nil {
		(*old)()
	}
	b.logs.cancel[f.job] = mine
	b.logs.mu.Unlock()
	defer func() {
		b.logs.mu.Lock()
		if b.logs.cancel[f.job] == mine {
			delete(b.logs.cancel, f.job)
		}
		b.logs.mu.Unlock()
	}()
	rc, err := b.src.Logs(ctx, f.job, true, f.tail)
	f.started <- err
	if err != nil {
		return
	}
	defer rc.Close() // a Read blocked on a quiet log ends with ctx, the request's
	buf := make([]byte, 16<<10)
	var carry []byte
	for {
		n, err := rc.Read(buf)
		chunk := append(carry, buf[:n]...)
		// Pass whole UTF-8 characters; keep a split one for the next read.
		cut := len(chunk)
		for cut > 0 && !utf8.Valid(chunk[:cut]) && len(chunk)-cut < utf8.UTFMax {
			cut--
		}
		b.pending.log(f.job, string(chunk[:cut]), err != nil)
		carry = append([]byte(nil), chunk[cut:]...)
		if err != nil {
			return
		}
	}
}
