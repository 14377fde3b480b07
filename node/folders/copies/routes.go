package copies

import (
	"context"
	"net/url"
	"time"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/peerapi"
)

// Routes is the copies API this machine serves to the pool (node/peerapi
// says how to add a call): starting a copy into one of its folders, on the
// grant of the member who asks, and following one.
var Routes = &peerapi.Table{}

var (
	routeStart = peerapi.Add[request, Transfer](Routes, "POST", "/v1/transfers", peerapi.GrantHolders, folders.RuleGrant)
	routeGet   = peerapi.Add[peerapi.None, Transfer](Routes, "GET", "/v1/transfers/{id}", peerapi.Members, "")
)

// startOn asks the machine c reaches to receive the copy tr.
func startOn(ctx context.Context, c peerapi.Conn, tr request) (Transfer, error) {
	return routeStart.Call(ctx, c, peerapi.Args{}, tr)
}

// transferOn reads the copy id there, once it ends or after wait (0: at
// once).
func transferOn(ctx context.Context, c peerapi.Conn, id string, wait time.Duration) (Transfer, error) {
	a := peerapi.Path(id)
	if wait > 0 {
		a.Query = url.Values{"wait": {wait.String()}}
	}
	return routeGet.Call(ctx, c, a, peerapi.None{})
}
