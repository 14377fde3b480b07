package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
)

// TestJobIdentityIsNodeAndID: a job is known by the node that runs it and
// its ID. An ID that two nodes use (a member's machine reused another's)
// names no job: the refusal says how to name one (NODE/ID); NODE/ID, by
// the node's name or device ID, picks it. A record says which node runs
// it, but the origin that wrote it is the node.
func TestJobIdentityIsNodeAndID(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, mikeID, "mike", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{Name: "alpha"}})
	putNode(t, db, mikeID, NodeRecord{Info: agent.Info{Name: "mike"}})
	const id = "7e82623a8db42109"
	ours := jobs.Job{ID: id, Name: "train", Node: alphaID, Owner: alphaID, State: jobs.Running, Created: t0}
	// mike's machine writes a record with the same ID, claiming alpha runs it.
	copied := jobs.Job{ID: id, Name: "train", Node: alphaID, Owner: alphaID, State: jobs.Running, Created: t0.Add(1)}
	putRecord(t, db, alphaID, KindJob, id, t0, mustJSON(t, ours))
	putRecord(t, db, mikeID, KindJob, id, t0, mustJSON(t, copied))
	r := NewReader(db, Self{ID: selfID, Name: "zeta"})
	ctx := context.Background()

	all, err := r.Jobs(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all {
		if j.NodeName == "mike" && j.Node != mikeID {
			t.Errorf("mike's record reads as run by %s; the origin is mike", j.Node)
		}
	}
	for _, ref := range []string{id, id[:8], "train"} {
		_, err := r.Job(ctx, ref)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "NODE/ID") {
			t.Errorf("Job(%q) = %v; want an ambiguity that asks for NODE/ID", ref, err)
		}
	}
	tests := []struct{ ref, node string }{
		{"alpha/" + id, alphaID},
		{"mike/" + id, mikeID},
		{alphaID + "/" + id, alphaID},
		{"mike/" + id[:8], mikeID},
		{"alpha/train", alphaID},
	}
	for _, tt := range tests {
		j, err := r.Job(ctx, tt.ref)
		if err != nil || j.Node != tt.node || j.ID != id {
			t.Errorf("Job(%q) = %s on %s, %v; want %s on %s", tt.ref, j.ID, j.Node, err, id, tt.node)
		}
	}
	if _, err := r.Job(ctx, "zeta/"+id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Job on a node without it: %v; want not found", err)
	}
	if got := JobRef(ours); got != alphaID+"/"+id {
		t.Errorf("JobRef = %q", got)
	}
}
