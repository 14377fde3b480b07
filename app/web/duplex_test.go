package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// TestLoadRefusedKeepsConnection: an image load refused before its archive
// is read (an unknown node) leaves the connection fit for the next call. A
// full-duplex handler that returns with the body unread makes the server
// panic on the connection's next request (Go issue 68560).
func TestLoadRefusedKeepsConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, self := newReplica(t)
	svc, err := app.New(app.Deps{DB: db, Self: self, Live: allOnline{}, Pool: &fakePool{}, Nodes: fakeNode{},
		Folders: fakeFolders{}, Copier: fakeCopier{}, Policy: fakePolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	c := web.NewClient(serveUnix(t, newHandler(svc)))
	for range 3 {
		if _, err := c.LoadImage(ctx, "no-such-node", strings.NewReader("tar"), false); err == nil {
			t.Fatal("a load to an unknown node was accepted")
		}
		rc, err := c.PullImage(ctx, app.PullRequest{Ref: "cuda:12"}) // the same streaming client
		if err != nil {
			t.Fatalf("the call after a refused load: %v", err)
		}
		rc.Close()
	}
}
