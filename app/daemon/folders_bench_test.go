package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/peerapi"
)

// clientDoer is a peerapi.Doer over one pinned client of a machine.
type clientDoer struct{ c *http.Client }

func (d clientDoer) Do(ctx context.Context, _ string, r peerapi.Request) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, "https://peer"+r.Path, r.Body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b := httperr.Read(resp)
		return nil, fmt.Errorf("%d %s: %s", resp.StatusCode, b.Code, b.Message)
	}
	return resp.Body, nil
}

// BenchmarkFolderMembersOverQUIC is a change of a folder's members made by
// an admin's daemon on another machine, over the real transports on
// loopback (QUIC, mutual TLS, the node's door, roles and peer handler),
// until the holder's replica lists the new members: the median and p90
// of one change.
func BenchmarkFolderMembersOverQUIC(b *testing.B) {
	ctx := b.Context()
	node := openServing(b, "node")
	addr := node.ep.Addr().String()
	if _, err := node.members.Create(ctx, app.CreateRequest{}); err != nil {
		b.Fatal(err)
	}
	inv, err := node.members.CreateInvite(ctx, app.InviteRequest{Role: "admin", Uses: 1, ExpiresSeconds: 3600})
	if err != nil {
		b.Fatal(err)
	}
	admin := openDaemon(b, "admin")
	if _, err := admin.members.Join(ctx, app.JoinRequest{Code: inv.Code, Addr: addr}); err != nil {
		b.Fatal(err)
	}
	nodeID, adminID := node.id.ID.String(), admin.id.ID.String()
	if _, err := node.svc.Share(ctx, app.ShareRequest{Name: "datasets", Path: b.TempDir(), Members: []string{nodeID}}); err != nil {
		b.Fatal(err)
	}
	c := folders.Client{Conn: peerapi.Conn{Doer: clientDoer{admin.ep.Client(node.id.ID, []string{addr})}, Node: nodeID}}
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		ch := folders.MembersChange{Add: []string{adminID}}
		if i%2 == 1 {
			ch = folders.MembersChange{Remove: []string{adminID}}
		}
		start := time.Now()
		if _, err := c.ChangeMembers(ctx, "datasets", ch); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		fs, err := node.svc.Folders(ctx)
		if err != nil || len(fs) != 1 || slices.Contains(fs[0].Members, adminID) != (i%2 == 0) {
			b.Fatalf("change %d is not in force on the holder: %+v, %v", i, fs, err)
		}
	}
	sort.Slice(took, func(i, k int) bool { return took[i] < took[k] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds()), "p90-µs")
}
