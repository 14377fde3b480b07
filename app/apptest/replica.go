package apptest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// Device IDs of the two machines (this one and a peer) of the replicas
// the tests of app/cli and app/web write.
const (
	SelfID = "SELF-AAAA-AAAA-AAAA"
	PeerID = "PEER-BBBB-BBBB-BBBB"
)

// Machine is one machine of a replica written by WriteMachines: a member
// with a node record that gives Addr, and one sample.
type Machine struct {
	ID, Name, Addr string
	Sample         agent.Sample
}

// OpenReplica opens (creating it) the replica at path and closes it when
// t ends.
func OpenReplica(t testing.TB, path string) *store.DB { t.Helper(); return replicatest.OpenAt(t, path) }

// WriteMachines writes machines into db as a daemon leaves them: each one
// a member (added at now by the first machine), a node record and its
// sample.
func WriteMachines(t testing.TB, db *store.DB, now time.Time, machines ...Machine) {
	t.Helper()
	ctx := context.Background()
	for _, m := range machines {
		if _, err := db.PutMember(ctx, store.MemberRow{ID: m.ID, Name: m.Name, Version: 1, AddedAt: now, AddedBy: machines[0].ID}); err != nil {
			t.Fatal(err)
		}
		nr := app.NodeRecord{Info: agent.Info{ID: m.ID, Name: m.Name}, Addresses: []string{m.Addr}}
		if _, err := db.Append(ctx, m.ID, app.KindNode, "", now, MustJSON(t, nr)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Append(ctx, m.ID, history.KindSample1s, fmt.Sprint(m.Sample.Time.Unix()), m.Sample.Time, MustJSON(t, m.Sample)); err != nil {
			t.Fatal(err)
		}
	}
}

// MustJSON returns v encoded as JSON, failing t when it cannot be.
func MustJSON(t testing.TB, v any) []byte { t.Helper(); return replicatest.MustJSON(t, v) }
