package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/sync/store"
)

// LastKnown serves, while no daemon answers, what `labpool nodes` prints
// then: the pool as the replica in dataDir last knew it. Every machine is
// offline and stale, this one included, which a running daemon never says
// of itself: the page tells the two answers apart by that, and keeps
// saying that the daemon is not running. Without a replica (or with one
// it cannot read) it answers as the proxy does, 502 "unreachable".
//
// SocketProxy calls it for GET /api/v1/nodes alone; the replica is opened
// for one call and closed, so a daemon that starts meanwhile finds it free.
func LastKnown(dataDir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stopped := &app.APIError{Status: http.StatusBadGateway, Code: "unreachable", Message: DaemonStopped}
		path := filepath.Join(dataDir, "replica.db")
		if _, err := os.Stat(path); err != nil {
			WriteError(w, stopped) // no replica: nothing was ever known here
			return
		}
		db, err := store.Open(path)
		if err != nil {
			WriteError(w, stopped)
			return
		}
		defer db.Close()
		self, err := app.LoadSelf(r.Context(), db)
		if err != nil {
			WriteError(w, stopped)
			return
		}
		nodes, err := app.NewReader(db, self).Nodes(r.Context())
		if err != nil {
			WriteError(w, stopped)
			return
		}
		for i := range nodes {
			nodes[i].Online, nodes[i].Stale = false, true
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(nodes)
	})
}
