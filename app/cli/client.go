package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/sync/store"
)

// reader is what the read-only verbs need; a daemon client or the replica.
type reader interface {
	Nodes(ctx context.Context) ([]app.Node, error)
	GPUs(ctx context.Context) ([]app.GPU, error)
	Pool(ctx context.Context) (app.PoolStatus, error)
	Jobs(ctx context.Context, all bool) ([]app.Job, error)
	Folders(ctx context.Context) ([]app.Folder, error)
}

// connect returns a client of the running daemon, or ErrNoDaemon.
func connect(ctx context.Context, g *globals) (*web.Client, error) {
	sock, _, err := g.socket(ctx)
	if err != nil {
		return nil, err
	}
	c := web.NewClient(sock)
	if err := c.Ping(ctx); err != nil {
		if errors.Is(err, web.ErrNoDaemon) {
			return nil, fmt.Errorf("no labpool daemon is running for %s: start `labpool agent` or open the app", g.dataDir)
		}
		return nil, err
	}
	return c, nil
}

// open returns the daemon's view, or, with no daemon running, the replica's
// last known state after a note on stderr that it may be stale.
func open(ctx context.Context, g *globals, stderr io.Writer) (reader, func(), error) {
	sock, _, err := g.socket(ctx)
	if err != nil {
		return nil, nil, err
	}
	c := web.NewClient(sock)
	err = c.Ping(ctx)
	if err == nil {
		return c, func() {}, nil
	}
	if !errors.Is(err, web.ErrNoDaemon) {
		return nil, nil, err
	}
	path := filepath.Join(g.dataDir, "replica.db")
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("no labpool daemon is running and %s holds no replica: start `labpool agent`", g.dataDir)
	}
	db, err := store.Open(path)
	if err != nil {
		return nil, nil, err
	}
	self, err := app.LoadSelf(ctx, db)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	fmt.Fprintln(stderr, "labpool: no daemon is running; showing the last known state, which may be stale")
	return app.NewReader(db, self), func() { db.Close() }, nil
}

// socket is the socket the verbs talk to: the system agent's when one runs
// and no data directory was named (--data, LABPOOL_DATA), else the data
// directory's.
func (g *globals) socket(ctx context.Context) (string, bool, error) {
	if g.dataGiven {
		return SocketPath(g.dataDir), false, nil
	}
	return Attach(ctx, SystemSocket(), g.dataDir)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
