package app

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
)

// memberKey is a member's device: its launch signer and device ID.
func memberKey(seed byte) (jobs.LaunchSigner, string) {
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	priv := ed25519.NewKeyFromSeed(s)
	pub := priv.Public().(ed25519.PublicKey)
	return jobs.LaunchSigner{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}, folders.DeviceID(pub)
}

// provenRecord is the record an honest node writes of owner's launch.
func provenRecord(t *testing.T, s jobs.LaunchSigner, owner, node, name string, spec jobs.Spec) jobs.Job {
	t.Helper()
	proof, err := s.Prove(node, spec)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := jobs.DecodeProof(proof)
	start, end := t0.Add(-2*time.Hour), t0.Add(-time.Hour)
	return jobs.Job{ID: p.JobID(), Name: name, Node: node, Owner: owner, Image: spec.Image, Spec: spec, OwnerProof: proof,
		State: jobs.Exited, GPUIndexes: []int{0}, GPUs: []string{"GPU-0"}, Started: &start, Finished: &end, Created: start}
}

// TestForgedJobOwnerNotAttributed: mike's machine writes job records that
// claim alice launched them: with no proof, with alice's proof of a job on
// another machine, with her proof of another spec, with one proof for two
// jobs. None is listed, reported or named as alice's; her one real job on
// mike's machine is, and a job proven by a device that is no member is not
// attributed either.
func TestForgedJobOwnerNotAttributed(t *testing.T) {
	db := openDB(t)
	alice, aliceID := memberKey(1)
	stranger, strangerID := memberKey(9)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, mikeID, "mike", false)
	putMember(t, db, aliceID, "alice", false)
	spec := jobs.Spec{Image: "pytorch:2", GPUs: 1}

	real := provenRecord(t, alice, aliceID, mikeID, "real", spec)
	noProof := real
	noProof.ID, noProof.Name, noProof.OwnerProof = "f00df00df00df00d", "no-proof", ""
	elsewhere := provenRecord(t, alice, aliceID, alphaID, "elsewhere", spec) // replicated from alpha, copied by mike
	otherSpec := provenRecord(t, alice, aliceID, mikeID, "other-spec", spec)
	otherSpec.Spec.Image, otherSpec.Image = "miner:1", "miner:1"
	twice := real
	twice.ID, twice.Name = "0123456789abcdef", "twice"
	notMember := provenRecord(t, stranger, strangerID, mikeID, "not-member", spec)
	for _, j := range []jobs.Job{real, noProof, elsewhere, otherSpec, twice, notMember} {
		putRecord(t, db, mikeID, KindJob, j.ID, j.Created, mustJSON(t, j))
	}
	r := NewReader(db, Self{ID: selfID, Name: "zeta"})
	r.now = func() time.Time { return t0 }
	ctx := context.Background()

	all, err := r.Jobs(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Fatalf("listed %d jobs; want all 6 (an unverified record is shown, never dropped)", len(all))
	}
	rules := map[string]string{
		"real":       "",
		"no-proof":   jobs.RuleProofMissing,
		"elsewhere":  jobs.RuleProofSig,
		"other-spec": jobs.RuleProofSig,
		"twice":      jobs.RuleProofJob,
		"not-member": RuleOwnerNotMember,
	}
	for _, j := range all {
		want := UnverifiedOwner
		if j.Name == "real" {
			want = "alice"
		}
		if j.OwnerName != want || j.OwnerVerified != (want == "alice") || j.OwnerUnverified != rules[j.Name] {
			t.Errorf("job %s reads as %q's (verified %v, rule %q); want %q, rule %q", j.Name, j.OwnerName, j.OwnerVerified, j.OwnerUnverified, want, rules[j.Name])
		}
		// A script reading "owner" alone (the API, --json) attributes
		// nothing unverified: what the node claims is "claimed_owner".
		var wire struct {
			Owner        string  `json:"owner"`
			ClaimedOwner *string `json:"claimed_owner"`
		}
		if err := json.Unmarshal(mustJSON(t, j), &wire); err != nil {
			t.Fatal(err)
		}
		wantOwner, wantClaimed := aliceID, ""
		if j.Name != "real" {
			wantOwner, wantClaimed = "", aliceID
			if j.Name == "not-member" {
				wantClaimed = strangerID
			}
		}
		if wire.Owner != wantOwner || (wire.ClaimedOwner == nil) != (wantClaimed == "") || wire.ClaimedOwner != nil && *wire.ClaimedOwner != wantClaimed {
			t.Errorf("job %s on the wire: owner %q, claimed_owner %v; want owner %q, claimed_owner %q", j.Name, wire.Owner, wire.ClaimedOwner, wantOwner, wantClaimed)
		}
	}

	rep, err := r.Report(ctx, ReportRequest{Since: 24 * 3600, Until: t0.Unix(), By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Rows {
		if row.Key == aliceID && row.GPUHoursGranted != 1 {
			t.Errorf("report: alice holds %.1f GPU hours; want 1 (her real job's)", row.GPUHoursGranted)
		}
		if row.Key == strangerID || row.Label == "alice" && row.Key != aliceID {
			t.Errorf("report row %+v attributes a forged job", row)
		}
	}
}

// signerFunc is a LaunchSigner of a test key.
type signerFunc struct{ s jobs.LaunchSigner }

func (f signerFunc) ProveLaunch(node string, spec jobs.Spec) (string, error) {
	return f.s.Prove(node, spec)
}

// TestLaunchCarriesProof: the service's launch carries this member's proof
// for that node and spec, and the record the node makes of it (named after
// the proof, as a node does) reads as this member's.
func TestLaunchCarriesProof(t *testing.T) {
	signer, selfKeyID := memberKey(3)
	const node = "NODE-DDDD-DDDD-DDDD"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		spec, err := jobs.DecodeSpec(r.Body)
		p, perr := jobs.DecodeProof(r.Header.Get(jobs.ProofHeader))
		if err != nil || perr != nil || p.Check(node, spec) != nil || p.Owner() != selfKeyID {
			http.Error(w, fmt.Sprintf("proof: %v %v", err, perr), http.StatusForbidden)
			return
		}
		json.NewEncoder(w).Encode(jobs.Job{ID: p.JobID(), Node: node, Owner: p.Owner(), Spec: spec, OwnerProof: r.Header.Get(jobs.ProofHeader)})
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	db := openDB(t)
	stub := stubDaemon{NewReader(db, Self{ID: selfKeyID})}
	svc, err := New(Deps{DB: db, Self: Self{ID: selfKeyID, Name: "zeta"}, Live: fakeLive{}, Pool: stub, Nodes: nodeAt{srv},
		Folders: stub, Copier: stub, Policy: stub, Signer: signerFunc{signer}})
	if err != nil {
		t.Fatal(err)
	}
	spec := jobs.Spec{Image: "img", GPUs: 1, Env: []string{"K=v"}}
	j, err := svc.launchOn(context.Background(), node, spec)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	if err := j.VerifyOwner(); err != nil || j.Owner != selfKeyID {
		t.Fatalf("the node's record of the launch: owner %s, %v; want this member's, verified", j.Owner, err)
	}
}

// proven is j as an honest node records owner's launch of it on node: named
// after owner's proof, which it keeps.
func proven(t *testing.T, s jobs.LaunchSigner, owner, node string, j jobs.Job) jobs.Job {
	t.Helper()
	proof, err := s.Prove(node, j.Spec)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := jobs.DecodeProof(proof)
	j.ID, j.Owner, j.OwnerProof = p.JobID(), owner, proof
	return j
}

// TestPoolWideBindsPrivate: a launch queued pool-wide binds its
// environment and command line to the signed spec with a salted digest,
// whose salt neither the signature nor the replicated record carries.
func TestPoolWideBindsPrivate(t *testing.T) {
	spec := jobs.Spec{Image: "img", GPUs: 2, Queue: true, Env: []string{"TOKEN=s3cret"}, Cmd: []string{"python", "train.py"}}
	a, b := poolWide(spec), poolWide(spec)
	if !a.Anywhere || a.PrivateSalt == "" || a.PrivateSalt == b.PrivateSalt {
		t.Fatalf("pool-wide spec: anywhere %v, salts %q %q; want anywhere and a fresh salt each", a.Anywhere, a.PrivateSalt, b.PrivateSalt)
	}
	if a.PrivateDigest != jobs.PrivateDigest(a.PrivateSalt, spec.Env, spec.Cmd) {
		t.Errorf("digest does not bind the environment and command line")
	}
	if s := jobs.SignedSpec(a); s.PrivateSalt != "" || s.PrivateDigest != a.PrivateDigest {
		t.Errorf("signed spec: salt %q digest %q; want no salt, the digest", s.PrivateSalt, s.PrivateDigest)
	}
	if pub := (jobs.Job{Spec: a}).Public(); pub.Spec.PrivateSalt != "" {
		t.Errorf("the replicated record carries the salt")
	}
	if empty := poolWide(jobs.Spec{Image: "img", Queue: true}); empty.PrivateDigest != "" || empty.PrivateSalt != "" {
		t.Errorf("nothing to bind: digest %q salt %q", empty.PrivateDigest, empty.PrivateSalt)
	}
}

// TestHandedOverOwner: a job alice queued pool-wide on alpha and alpha
// handed to mike reads as alice's on mike, and is listed once; a record
// that copies alice's proof from alpha's record without alpha having handed
// the job over (a machine claiming her run, or a handed job whose home has
// not said so yet) is not attributed to her. Between mike's acceptance and
// alpha hearing of it, the job is listed once, on mike.
func TestHandedOverOwner(t *testing.T) {
	alice, aliceID := memberKey(1)
	tests := []struct {
		name   string
		home   func(j *jobs.Job) // alpha's record of the job; nil: none
		rule   string
		listed int
	}{
		{"moved to mike", func(j *jobs.Job) { j.State, j.MovedTo = jobs.Moved, mikeID }, "", 2}, // --all: its home's record says "moved"
		{"offered to mike, answer on its way", func(j *jobs.Job) { j.State, j.OfferedTo = jobs.Queued, mikeID }, "", 1},
		{"home never offered it", func(j *jobs.Job) { j.State = jobs.Queued }, RuleNotHanded, 2},
		{"moved elsewhere", func(j *jobs.Job) { j.State, j.MovedTo = jobs.Moved, selfID }, RuleNotHanded, 2},
		{"no record of the home", nil, RuleNotHanded, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			putMember(t, db, selfID, "zeta", false)
			putMember(t, db, mikeID, "mike", false)
			putMember(t, db, alphaID, "alpha", false)
			putMember(t, db, aliceID, "alice", false)
			spec := jobs.Spec{Image: "pytorch:2", GPUs: 1, Queue: true, Anywhere: true}
			home := provenRecord(t, alice, aliceID, alphaID, "sweep", spec)
			there := home
			there.Node, there.Home, there.Fence, there.State, there.Finished = mikeID, alphaID, 1, jobs.Running, nil
			putRecord(t, db, mikeID, KindJob, there.ID, there.Created, mustJSON(t, there))
			if tt.home != nil {
				tt.home(&home)
				putRecord(t, db, alphaID, KindJob, home.ID, home.Created, mustJSON(t, home))
			}
			r := NewReader(db, Self{ID: selfID, Name: "zeta"})
			all, err := r.Jobs(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != tt.listed {
				t.Errorf("listed %d records; want %d", len(all), tt.listed)
			}
			if j, err := r.Job(context.Background(), there.ID); tt.rule == "" && (err != nil || j.Node != mikeID) {
				t.Errorf("job %s names %s, %v; want mike's record", there.ID, j.Node, err)
			}
			for _, j := range all {
				if j.Node == mikeID && j.OwnerUnverified != tt.rule {
					t.Errorf("mike's record: rule %q, owner %q; want rule %q", j.OwnerUnverified, j.OwnerName, tt.rule)
				}
			}
		})
	}
}
