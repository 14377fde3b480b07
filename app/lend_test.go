package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/lend"
)

// TestNodesLend: Nodes shows what each machine last published about its
// lending; a record that does not decode, or says no phase, shows
// nothing; a record past its kind's cap is refused by the replica.
func TestNodesLend(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, mikeID, "mike", false)
	putNode(t, db, alphaID, NodeRecord{})
	putNode(t, db, mikeID, NodeRecord{})
	seen := t0.Add(-23 * time.Minute)
	putRecord(t, db, alphaID, KindLend, "", t0, mustJSON(t, lend.Status{Mode: lend.Idle, Phase: lend.Lent, Since: t0, OwnerSeen: seen}))
	putRecord(t, db, mikeID, KindLend, "", t0, []byte(`{"mode":"idle"}`))
	s := newService(t, db, Self{ID: selfID, Name: "self"}, nil, nil)
	nodes, err := s.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	if l := byName["alpha"].Lend; l == nil || l.Phase != lend.Lent || !l.OwnerSeen.Equal(seen) {
		t.Errorf("alpha's lend %+v; want lent, the owner last seen 23 min before", l)
	}
	if l := byName["mike"].Lend; l != nil {
		t.Errorf("mike's lend record says no phase, yet shows %+v", l)
	}
	if _, err := db.Append(ctx, selfID, KindLend, "", t0, []byte(`{"why":"`+strings.Repeat("x", 5<<10)+`"}`)); err == nil {
		t.Error("a lend record of 5 KiB was taken: its kind caps it at 4 KiB")
	}
}
