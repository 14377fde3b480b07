// Command tsgen writes frontend/src/api/types.gen.ts: the TypeScript of the
// Go types the local API carries, read from their JSON tags by reflection,
// so that the UI's types cannot drift from the Go ones (`make check` fails
// when the file differs from what this writes).
//
// Usage (from app/web, through go generate):
//
//	go run ./tsgen -o ../../frontend/src/api/types.gen.ts
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
)

// roots are the types the API carries, under the names the UI uses; the
// named structs they reach are written too, under their Go names unless
// listed here.
var roots = []struct {
	name string
	v    any
}{
	{"Self", app.Self{}},
	{"Node", app.Node{}},
	{"History", app.History{}},
	{"PoolStatus", app.PoolStatus{}},
	{"JoinCode", app.JoinCode{}},
	{"JoinRequest", app.JoinRequest{}},
	{"InviteRequest", app.InviteRequest{}},
	{"NewInvite", app.NewInvite{}},
	{"RoleRequest", app.RoleRequest{}},
	{"ProbeRequest", app.ProbeRequest{}},
	{"ProbeResult", app.ProbeResult{}},
	{"ErrorBody", app.Error{}},
	{"Job", app.Job{}},
	{"LaunchRequest", app.LaunchRequest{}},
	{"Plan", app.Plan{}},
	{"Tunnel", app.Tunnel{}},
	{"OpenRequest", app.OpenRequest{}},
	{"PullRequest", app.PullRequest{}},
	{"JobStats", jobs.Stats{}},
	{"Image", jobs.Image{}},
	{"LogChunk", app.LogChunk{}},
	{"Folder", app.Folder{}},
	{"ShareRequest", app.ShareRequest{}},
	{"CopyRequest", app.CopyRequest{}},
	{"Entry", folders.Entry{}},
	{"Transfer", app.Transfer{}},
	{"Policy", app.Policy{}},
	{"PolicyUpdate", app.PolicyUpdate{}},
}

func main() {
	out := flag.String("o", "types.gen.ts", "file to write")
	flag.Parse()
	if err := os.WriteFile(*out, []byte(generate()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "tsgen:", err)
		os.Exit(1)
	}
}
