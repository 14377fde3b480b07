package containers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"golang.org/x/sync/errgroup"
)

// managed inspects id and refuses it unless it carries labpool's label.
func (r *Runtime) managed(ctx context.Context, id string) (container.InspectResponse, error) {
	ctx, cancel := r.bounded(ctx)
	defer cancel()
	ins, err := r.api.ContainerInspect(ctx, id)
	if err != nil {
		return ins, fmt.Errorf("inspect container %s: %w", shortID(id), explain(err, ""))
	}
	if ins.Config == nil || ins.Config.Labels[LabelManaged] != "true" {
		return ins, fmt.Errorf("%w: %s", ErrNotManaged, shortID(id))
	}
	return ins, nil
}

// Stop stops a container: SIGTERM, then SIGKILL after timeout.
func (r *Runtime) Stop(ctx context.Context, id string, timeout time.Duration) error {
	if _, err := r.managed(ctx, id); err != nil {
		return err
	}
	secs := int(timeout.Round(time.Second) / time.Second)
	ctx, cancel := r.boundedPlus(ctx, timeout)
	defer cancel()
	if err := r.api.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stop container %s: %w", shortID(id), explain(err, ""))
	}
	return nil
}

// Remove removes a container, killing it first if it runs.
// Its network goes with it.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return err
	}
	rctx, cancel := r.bounded(ctx)
	defer cancel()
	if err := r.api.ContainerRemove(rctx, id, container.RemoveOptions{Force: true}); err != nil {
		return fmt.Errorf("remove container %s: %w", shortID(id), explain(err, ""))
	}
	r.forget(id)
	r.dropNetwork(ctx, ownNetwork(ins))
	return nil
}

// ownNetwork is the name of a container's own job network ("" for one on
// a network of the engine's).
func ownNetwork(ins container.InspectResponse) string {
	if ins.HostConfig == nil {
		return ""
	}
	switch m := ins.HostConfig.NetworkMode; {
	case m.IsDefault(), m.IsBridge(), m.IsHost(), m.IsNone(), m.IsContainer():
		return ""
	default:
		return string(m)
	}
}

// IsGone says whether err is the engine's answer for a container (or
// network, or image) that does not exist.
func IsGone(err error) bool { return client.IsErrNotFound(err) }

// Inspect reports one labpool container.
func (r *Runtime) Inspect(ctx context.Context, id string) (Container, error) {
	return r.inspect(ctx, id)
}

func (r *Runtime) inspect(ctx context.Context, id string) (Container, error) {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return Container{}, err
	}
	c := fromInspect(ins)
	c.ImageLoadedBy = r.book.loader(c.ImageID)
	return c, nil
}

func fromInspect(ins container.InspectResponse) Container {
	c := Container{ID: ins.ID, Name: strings.TrimPrefix(ins.Name, "/"), Ports: map[int]int{}}
	if ins.ContainerJSONBase != nil {
		c.ImageID, c.Restarts = ins.Image, ins.RestartCount
	}
	if ins.Config != nil {
		c.Image, c.Labels = ins.Config.Image, ins.Config.Labels
	}
	if st := ins.State; st != nil {
		c.State, c.Running, c.ExitCode, c.OOMKilled, c.Error = string(st.Status), st.Running, st.ExitCode, st.OOMKilled, st.Error
		c.Started = dockerTime(st.StartedAt)
		if !c.Running {
			c.Finished = dockerTime(st.FinishedAt)
		}
	}
	if ins.NetworkSettings == nil {
		return c
	}
	if ep := ins.NetworkSettings.Networks[ownNetwork(ins)]; ep != nil && ins.Config != nil {
		c.Addr = ep.IPAddress
		for port := range ins.Config.ExposedPorts {
			c.Ports[port.Int()] = port.Int()
		}
		return c
	}
	for port, bs := range ins.NetworkSettings.Ports { // published by an older agent
		for _, b := range bs {
			hp, err := strconv.Atoi(b.HostPort)
			if err == nil && b.HostIP == "127.0.0.1" {
				c.Addr, c.Ports[port.Int()] = "127.0.0.1", hp
				break
			}
		}
	}
	return c
}

// dockerTime parses Docker's timestamps; "never" (year 1) is the zero time.
func dockerTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 2000 {
		return time.Time{}
	}
	return t
}

// List returns every labpool container (of this node, when Config.Node is
// set), in all states. It inspects them a few at a time.
func (r *Runtime) List(ctx context.Context) ([]Container, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if r.cfg.Node != "" {
		f.Add("label", LabelNode+"="+r.cfg.Node)
	}
	lctx, cancel := r.bounded(ctx)
	sums, err := r.api.ContainerList(lctx, container.ListOptions{All: true, Filters: f})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", explain(err, ""))
	}
	found := make([]*Container, len(sums))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, s := range sums {
		g.Go(func() error {
			if c, err := r.inspect(gctx, s.ID); err == nil {
				found[i] = &c
			} // else removed meanwhile, or not ours after all
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]Container, 0, len(found))
	for _, c := range found {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, nil
}

// Events streams state changes of labpool containers until ctx ends. The
// error channel carries at most one error, when the stream breaks (for
// example a dockerd restart); the event channel is closed either way.
//
// While it streams it also keeps the host guard's jumps first (see
// keepGuardFirst): when the stream opens (a new stream often follows a
// restarted engine, which put its rules back above the guard's), at each
// network the engine creates (one made by hand, docker network create,
// puts the engine's rules above the guard's too) and every GuardEvery.
func (r *Runtime) Events(ctx context.Context) (<-chan Event, <-chan error) {
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("label", LabelManaged+"=true"))
	if r.cfg.Node != "" {
		f.Add("label", LabelNode+"="+r.cfg.Node)
	}
	r.guardCheck("the engine's event stream opened")
	sctx, cancel := context.WithCancel(ctx)
	msgs, errs := r.api.Events(sctx, events.ListOptions{Filters: f})
	nets, netErrs := r.api.Events(sctx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", string(events.NetworkEventType)), filters.Arg("event", string(events.ActionCreate)))})
	out := make(chan Event, 64)
	outErr := make(chan error, 1)
	go func() {
		defer close(out)
		defer cancel()
		tick := time.NewTicker(r.cfg.GuardEvery)
		defer tick.Stop()
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					return
				}
				ev := Event{ID: m.Actor.ID, Action: string(m.Action), Labels: m.Actor.Attributes, Time: time.Unix(0, m.TimeNano)}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case _, ok := <-nets:
				if !ok {
					nets = nil // the periodic check goes on
					continue
				}
				r.guardCheck("the engine created a network")
			case <-tick.C:
				r.guardCheck("the periodic check")
			case err := <-errs:
				r.streamBroke(ctx, err, outErr)
				return
			case err := <-netErrs:
				r.streamBroke(ctx, err, outErr)
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, outErr
}

// streamBroke reports the error that ended an event stream, unless ctx
// ended it.
func (r *Runtime) streamBroke(ctx context.Context, err error, outErr chan<- error) {
	if err != nil && ctx.Err() == nil {
		outErr <- fmt.Errorf("watch docker events: %w", explain(err, ""))
	}
}
