package daemon

import (
	"net/http"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// folderHandler serves this machine's shares to the pool: each request is
// checked against the role of the device asking, and a copy's reads
// against the member who asked for the copy (its grant).
func (d *Daemon) folderHandler() *peerapi.Mux {
	return folders.Handler(d.folders, folders.Access{Caller: d.folderCaller, Role: d.folderRole})
}

// folderCaller is the device that TLS proved for r, with its role.
func (d *Daemon) folderCaller(r *http.Request) folders.Caller {
	id, _ := transport.PeerID(r)
	role, _ := d.roleOf(id)
	return folders.Caller{ID: id.String(), Role: role}
}

// folderRole is the role of the device id (text form), "" for none.
func (d *Daemon) folderRole(id string) string {
	pid, err := peer.ParseID(id)
	if err != nil {
		return ""
	}
	role, _ := d.roleOf(pid)
	return role
}
