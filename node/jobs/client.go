package jobs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labpool/labpool/node/peerapi"
)

// Client calls the jobs API (Routes) of one machine.
type Client struct{ peerapi.Conn }

// Submit launches spec there; proof is its owner's (ProofHeader; "": none,
// which a node of a pool refuses).
func (c Client) Submit(ctx context.Context, spec Spec, proof string) (Job, error) {
	var a peerapi.Args
	if proof != "" {
		a.Header = http.Header{ProofHeader: {proof}}
	}
	return routeSubmit.Call(ctx, c.Conn, a, spec)
}

// List lists the machine's jobs.
func (c Client) List(ctx context.Context) ([]Job, error) {
	return routeList.Call(ctx, c.Conn, peerapi.Args{}, none{})
}

// Get reads job id as the machine shows it to this device.
func (c Client) Get(ctx context.Context, id string) (Job, error) {
	return routeGet.Call(ctx, c.Conn, peerapi.Path(id), none{})
}

// Stop stops job id.
func (c Client) Stop(ctx context.Context, id string) (Job, error) {
	return routeStop.Call(ctx, c.Conn, peerapi.Path(id), none{})
}

// Remove removes job id; force removes one that still runs.
func (c Client) Remove(ctx context.Context, id string, force bool) error {
	a := peerapi.Path(id)
	if force {
		a.Query = url.Values{"force": {"1"}}
	}
	_, err := routeRemove.Call(ctx, c.Conn, a, none{})
	return err
}

// Logs streams the last tail lines of job id's logs (-1: all), and
// follows them when follow.
func (c Client) Logs(ctx context.Context, id string, follow bool, tail int) (io.ReadCloser, error) {
	a := peerapi.Path(id)
	a.Query = url.Values{"tail": {strconv.Itoa(tail)}}
	if follow {
		a.Query.Set("follow", "1")
	}
	return routeLogs.Open(ctx, c.Conn, a, nil)
}

// Stats reads job id's resource use now.
func (c Client) Stats(ctx context.Context, id string) (Stats, error) {
	return routeStats.Call(ctx, c.Conn, peerapi.Path(id), none{})
}

// Tunnel carries one connection to port of job id: what conn sends goes to
// the port, and the reply is what the port sends back.
func (c Client) Tunnel(ctx context.Context, id string, port int, conn io.Reader) (io.ReadCloser, error) {
	a := peerapi.Path(id)
	a.Query = url.Values{"port": {strconv.Itoa(port)}}
	return routeTunnel.Open(ctx, c.Conn, a, conn)
}

// Access answers nil when this device may act on job id there, the
// refusal naming the rule otherwise.
func (c Client) Access(ctx context.Context, id string) error {
	_, err := routeAccess.Call(ctx, c.Conn, peerapi.Path(id), none{})
	return err
}

// ClearGPU lifts the quarantine of the machine's GPU index.
func (c Client) ClearGPU(ctx context.Context, index int) (Quarantine, error) {
	return routeClearGPU.Call(ctx, c.Conn, peerapi.Path(strconv.Itoa(index)), none{})
}

// Offer offers the machine the job o.Job, which this machine, its home,
// hands over (handover.go), and returns its answer; an error is no answer.
func (c Client) Offer(ctx context.Context, o Offer) (OfferAnswer, error) {
	ans, err := routeHandover.Call(ctx, c.Conn, peerapi.Path(o.Job.ID), o)
	if err != nil {
		return OfferAnswer{}, fmt.Errorf("offer job %s: %w", o.Job.ID, err)
	}
	if ans.Accepted && (ans.Job == nil || ans.Job.ID != o.Job.ID) {
		return OfferAnswer{}, fmt.Errorf("offer job %s: an acceptance naming another job", o.Job.ID)
	}
	return ans, nil
}
