package folders

import (
	"context"

	"github.com/labpool/labpool/node/peerapi"
)

// Routes is the shares API this machine serves to the pool (node/peerapi
// says how to add a call). Browsing is for members, by their role; a
// copy's reads are on the grant the request carries. Client browses;
// HTTPSource reads for a copy.
var Routes = &peerapi.Table{}

// bundleRequest is the body of a bundle: the files it sends, in order.
type bundleRequest struct {
	Paths []string `json:"paths"`
}

var (
	routeList    = peerapi.Add[peerapi.None, []Info](Routes, "GET", "/v1/folders", peerapi.Members, "")
	routeLs      = peerapi.Add[peerapi.None, []Entry](Routes, "GET", "/v1/folders/{name}/ls", peerapi.Members, "")
	routeWalk    = peerapi.Add[peerapi.None, peerapi.Stream](Routes, "GET", "/v1/folders/{name}/walk", peerapi.GrantHolders, RuleGrant)
	routeSums    = peerapi.Add[peerapi.None, Sums](Routes, "GET", "/v1/folders/{name}/sums", peerapi.GrantHolders, RuleGrant)
	routeRead    = peerapi.Add[peerapi.None, peerapi.Stream](Routes, "GET", "/v1/folders/{name}/read", peerapi.GrantHolders, RuleGrant)
	routeBlocks  = peerapi.Add[peerapi.None, peerapi.Stream](Routes, "GET", "/v1/folders/{name}/blocks", peerapi.GrantHolders, RuleGrant)
	routeBundle  = peerapi.Add[bundleRequest, peerapi.Stream](Routes, "POST", "/v1/folders/{name}/bundle", peerapi.GrantHolders, RuleGrant)
	routeMembers = peerapi.Add[MembersChange, Info](Routes, "PATCH", "/v1/folders/{name}/members", peerapi.AdminsOrSharer, RuleMembers)
)

// Client browses the shares of one machine.
type Client struct{ peerapi.Conn }

// List lists the shares the machine shows this device.
func (c Client) List(ctx context.Context) ([]Info, error) {
	return routeList.Call(ctx, c.Conn, peerapi.Args{}, peerapi.None{})
}

// Ls lists the directory path of the share folder there.
func (c Client) Ls(ctx context.Context, folder, path string) ([]Entry, error) {
	a := peerapi.Path(folder)
	a.Query = map[string][]string{"path": {path}}
	return routeLs.Call(ctx, c.Conn, a, peerapi.None{})
}

// ChangeMembers changes who may use the share folder there; the machine
// checks that this device may (an owner, an admin, or the share's sharer).
func (c Client) ChangeMembers(ctx context.Context, folder string, ch MembersChange) (Info, error) {
	return routeMembers.Call(ctx, c.Conn, peerapi.Path(folder), ch)
}
