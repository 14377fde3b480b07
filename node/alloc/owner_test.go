package alloc

import "testing"

// TestOwnerGrant: a lent machine's owner, back at it, holds its GPUs
// against guests (their requests pass every unit over, saying why) and
// not against their own jobs.
func TestOwnerGrant(t *testing.T) {
	a := gpus("a", 2, 80<<30)
	owner := Grant{Holder: Holder{Kind: Owner, ID: "lend", Member: "self"}, Units: []string{"a-gpu0", "a-gpu1"}}
	guest := Fit(a, []Grant{owner}, Request{Holder: Holder{Kind: Job, ID: "g", Member: "m1"}, Count: 1}, t0)
	if guest.Fits || len(guest.Passed) != 2 || guest.Passed[0].Reason != OwnerUse {
		t.Errorf("a guest's request on an owner-held machine: %+v; want both GPUs passed over, the owner using them", guest)
	}
	own := Fit(a, []Grant{owner}, Request{Holder: Holder{Kind: Job, ID: "o", Member: "self"}, Count: 2}, t0)
	if !own.Fits {
		t.Errorf("the owner's own job on their machine: %+v; want it to fit", own)
	}
}
