package jobs

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/folders"
)

// testSigner is a member's device: its launch signer and its device ID.
func testSigner(seed byte) (LaunchSigner, string) {
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	priv := ed25519.NewKeyFromSeed(s)
	pub := priv.Public().(ed25519.PublicKey)
	return LaunchSigner{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}, folders.DeviceID(pub)
}

// provenJob is the record a node keeps of owner's launch of spec on node,
// made as an honest node makes it.
func provenJob(t *testing.T, s LaunchSigner, owner, node string, spec Spec) Job {
	t.Helper()
	proof, err := s.Prove(node, spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodeProof(proof)
	if err != nil {
		t.Fatal(err)
	}
	return Job{ID: p.JobID(), Node: node, Owner: owner, Spec: spec, OwnerProof: proof}
}

// TestVerifyOwner: a record verifies only with its owner's signature on its
// node, its ID and its spec as the record carries it; what the record never
// carries (environment values, command line) and what the machine's policy
// fills (the memory limit) are not signed.
func TestVerifyOwner(t *testing.T) {
	alice, aliceID := testSigner(1)
	_, bobID := testSigner(2)
	spec := Spec{Image: "pytorch:2", GPUs: 2, Env: []string{"TOKEN=s3cret"}, Cmd: []string{"python", "train.py"}}
	good := provenJob(t, alice, aliceID, "NODE-A", spec)
	other := provenJob(t, alice, aliceID, "NODE-A", spec)
	tests := []struct {
		name string
		edit func(*Job)
		rule string // "" verifies
	}{
		{"as signed", func(*Job) {}, ""},
		{"public record", func(j *Job) { *j = j.Public() }, ""},
		{"memory filled by policy", func(j *Job) { j.Spec.MemoryBytes = 8 << 30 }, ""},
		{"claims another owner", func(j *Job) { j.Owner = bobID }, RuleProofKey},
		{"another node's record", func(j *Job) { j.Node = "NODE-B" }, RuleProofSig},
		{"another image", func(j *Job) { j.Spec.Image = "miner:1" }, RuleProofSig},
		{"more GPUs", func(j *Job) { j.Spec.GPUs = 8 }, RuleProofSig},
		{"a second job from one proof", func(j *Job) { j.ID = "0123456789abcdef" }, RuleProofJob},
		{"another launch's proof", func(j *Job) { j.OwnerProof = other.OwnerProof }, RuleProofJob},
		{"no proof (older node)", func(j *Job) { j.OwnerProof = "" }, RuleProofMissing},
		{"truncated", func(j *Job) { j.OwnerProof = j.OwnerProof[:40] }, RuleProofForm},
		{"signature flipped", func(j *Job) {
			p, _ := DecodeProof(j.OwnerProof)
			p.Sig[3] ^= 1
			j.OwnerProof, j.ID = p.Encode(), p.JobID()
		}, RuleProofSig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := good
			j.Spec.Env, j.Spec.Cmd = append([]string(nil), spec.Env...), append([]string(nil), spec.Cmd...)
			tt.edit(&j)
			err := j.VerifyOwner()
			var pe *ProofError
			switch {
			case tt.rule == "" && err != nil:
				t.Fatalf("VerifyOwner = %v; want nil", err)
			case tt.rule != "" && (!errors.As(err, &pe) || pe.Rule != tt.rule):
				t.Fatalf("VerifyOwner = %v; want rule %q", err, tt.rule)
			}
		})
	}
}

// proveCall launches body on srv as c, with proof in ProofHeader.
func proveCall(t *testing.T, url string, c Caller, body, proof string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/jobs", strings.NewReader(body))
	req.Header.Set("X-Owner", c.ID)
	req.Header.Set("X-Role", c.Role)
	req.Header.Set(ProofHeader, proof)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// TestSubmitProven: the node takes a launch only with its caller's own
// signature on that spec for this machine; the job is named after the
// proof and its record keeps it, so a launch sent twice is one job, and the
// record verifies wherever it is read.
func TestSubmitProven(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m := newTestManager(t, rt, 2, st)
	srv := trustServer(t, m)
	alice, aliceID := testSigner(1)
	bob, bobID := testSigner(2)
	spec := Spec{Image: "img", GPUs: 1, Env: []string{"K=v"}}
	body, _ := json.Marshal(spec)
	proof, _ := alice.Prove("NODE", spec)
	p, _ := DecodeProof(proof)

	code, reply := proveCall(t, srv.URL, member(aliceID), string(body), proof)
	var j Job
	if code != 200 || json.Unmarshal([]byte(reply), &j) != nil {
		t.Fatalf("proven launch: %d %s", code, reply)
	}
	if j.ID != p.JobID() || j.OwnerProof != proof || j.Owner != aliceID {
		t.Fatalf("record: id %s proof %q owner %s; want the proof's job %s of %s", j.ID, j.OwnerProof, j.Owner, p.JobID(), aliceID)
	}
	if err := st.jobs[j.ID].VerifyOwner(); err != nil {
		t.Fatalf("the replicated record does not verify: %v", err)
	}
	if got := rt.launchOf(j.Container).Labels[LabelProof]; got != proof {
		t.Errorf("task label %s = %q; want the proof", LabelProof, got)
	}
	// Sent again (a retry, or a replay): the same job, nothing started twice.
	starts := rt.count("Start")
	code, reply = proveCall(t, srv.URL, member(aliceID), string(body), proof)
	var again Job
	if code != 200 || json.Unmarshal([]byte(reply), &again) != nil || again.ID != j.ID || rt.count("Start") != starts {
		t.Fatalf("launch sent twice: %d %s, %d starts; want job %s again and no start", code, reply, rt.count("Start")-starts, j.ID)
	}

	other, _ := json.Marshal(Spec{Image: "miner", GPUs: 1})
	bobProof, _ := bob.Prove("NODE", spec)
	elsewhere, _ := alice.Prove("NODE-B", spec)
	refusals := []struct {
		name        string
		caller      Caller
		body, proof string
		code        int
		rule        string
	}{
		{"another member's proof", member(aliceID), string(body), bobProof, 403, RuleProofKey},
		{"a proof sent by another member", member(bobID), string(body), proof, 403, RuleProofKey},
		{"another spec", member(aliceID), string(other), proof, 400, RuleProofSig},
		{"another machine's proof", member(aliceID), string(body), elsewhere, 400, RuleProofSig},
		{"malformed", member(aliceID), string(body), "xyz", 400, RuleProofForm},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			n := len(m.List())
			code, reply := proveCall(t, srv.URL, tt.caller, tt.body, tt.proof)
			if code != tt.code || !strings.Contains(reply, tt.rule) || len(m.List()) != n {
				t.Errorf("= %d %s (%d jobs, was %d); want %d naming %q and no job", code, reply, len(m.List()), n, tt.code, tt.rule)
			}
		})
	}
}

// TestUnsignedPeerLaunchRefused: a launch from another machine without its
// owner's proof is refused, naming the rule, and starts nothing, whatever
// the caller's role; the machine's own user (the local socket) may still
// launch without one, and its record reads as unverified.
func TestUnsignedPeerLaunchRefused(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 1, &memStore{})
	srv := trustServer(t, m)
	_, aliceID := testSigner(1)
	for _, c := range []Caller{member(aliceID), admin(aliceID), {ID: aliceID, Role: RoleOwner}} {
		code, reply := proveCall(t, srv.URL, c, `{"image":"img","gpus":1}`, "")
		if code != 403 || !strings.Contains(reply, RuleProofMissing) || len(m.List()) != 0 || rt.count("Start") != 0 {
			t.Errorf("unsigned launch of a %s: %d %s (%d jobs); want 403 naming %q and no job", c.Role, code, reply, len(m.List()), RuleProofMissing)
		}
	}
	code, reply := proveCall(t, srv.URL, Caller{ID: "NODE"}, `{"image":"img","gpus":1}`, "")
	var j Job
	if code != 200 || json.Unmarshal([]byte(reply), &j) != nil {
		t.Fatalf("the local user's unsigned launch: %d %s; want it run", code, reply)
	}
	var pe *ProofError
	if err := j.VerifyOwner(); !errors.As(err, &pe) || pe.Rule != RuleProofMissing {
		t.Errorf("the local unsigned launch's record verifies as %v; want unverified (%s)", err, RuleProofMissing)
	}
}

// TestProofSurvivesReadoption: after the agent restarts, a job's record
// keeps its proof (from the store), and a record lost meanwhile is rebuilt
// from its task's labels with the proof and what it signs (the spec as a
// record carries it), so that it still verifies as its owner's.
func TestProofSurvivesReadoption(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m1 := newTestManager(t, rt, 2, st)
	alice, aliceID := testSigner(1)
	ctx := context.Background()
	var ids []string
	lost := Spec{Image: "pytorch:2", Name: "lost", GPUs: 1, Ports: []int{8888}, ContainerSpec: ContainerSpec{ShmBytes: 1 << 30},
		Env: []string{"TOKEN=s3cret"}, Cmd: []string{"python", "train.py"}}
	for _, spec := range []Spec{{Image: "img", GPUs: 1}, lost} {
		proof, _ := alice.Prove("NODE", spec)
		j, err := m1.SubmitProven(ctx, member(aliceID), spec, proof)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	st.mu.Lock()
	delete(st.jobs, ids[1]) // its record was lost
	st.mu.Unlock()

	m2 := newTestManager(t, rt, 2, st)
	kept, _ := m2.Get(ids[0])
	if err := kept.Public().VerifyOwner(); err != nil || kept.State != Running {
		t.Errorf("re-adopted job: %s, proof %v; want running and verified", kept.State, err)
	}
	rebuilt, _ := m2.Get(ids[1])
	if p, err := DecodeProof(rebuilt.OwnerProof); err != nil || p.JobID() != ids[1] || p.Owner() != aliceID {
		t.Errorf("record rebuilt from labels: proof %q (%v); want alice's proof of job %s", rebuilt.OwnerProof, err, ids[1])
	}
	if err := rebuilt.Public().VerifyOwner(); err != nil || rebuilt.State != Running || rebuilt.Owner != aliceID {
		t.Errorf("record rebuilt from labels: %s, owner %s, proof check %v; want running, alice's, verified", rebuilt.State, short(rebuilt.Owner), err)
	}
	if saved := st.job(ids[1]); saved.VerifyOwner() != nil || strings.Contains(string(mustMarshal(t, saved)), "s3cret") {
		t.Errorf("replicated rebuilt record: %+v; want it verified, without the env", saved)
	}
	if rebuilt.Spec.Image != "pytorch:2" || rebuilt.Image != "pytorch:2" || rebuilt.Name != "lost" {
		t.Errorf("rebuilt spec %+v; want the launch's", rebuilt.Spec)
	}
}

// TestSpecFromLabel: a task's spec label reads back as what the proof
// signs; one that is absent, malformed, oversized or carries unknown
// fields or secrets reads as none, or without the secrets.
func TestSpecFromLabel(t *testing.T) {
	spec := Spec{Image: "img", GPUs: 2, Env: []string{"K=v"}, Cmd: []string{"x"}, MemoryBytes: 1 << 30}
	tests := []struct {
		name, label string
		ok          bool
	}{
		{"as written", specLabel(spec), true},
		{"absent", "", false},
		{"not JSON", "{", false},
		{"unknown field", `{"image":"img","hostconfig":{}}`, false},
		{"two values", `{"image":"img"}{"image":"b"}`, false},
		{"oversized", `{"image":"` + strings.Repeat("a", maxSpec) + `"}`, false},
		{"with env and command", `{"image":"img","gpus":2,"env":["K=v"],"cmd":["x"]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := specFromLabel(tt.label)
			if ok != tt.ok || ok && (SpecDigest(got) != SpecDigest(spec) || got.Env != nil || got.Cmd != nil) {
				t.Errorf("specFromLabel = %+v, %v; want %v and the signed spec", got, ok, tt.ok)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeProof: any header value decodes to a proof or a refusal naming
// the rule, never a panic; what decodes encodes back to the same text.
func FuzzDecodeProof(f *testing.F) {
	s, _ := testSigner(1)
	good, _ := s.Prove("NODE", Spec{Image: "img"})
	for _, seed := range []string{"", "x", good, good[:len(good)-1] + "A", strings.Repeat("A", len(good))} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := DecodeProof(in)
		var pe *ProofError
		if err != nil {
			if !errors.As(err, &pe) || pe.Rule == "" {
				t.Fatalf("DecodeProof(%q) = %v; want a ProofError naming its rule", in, err)
			}
			return
		}
		if p.Encode() != in {
			t.Fatalf("DecodeProof(%q) encodes back as %q", in, p.Encode())
		}
		p.Check("NODE", Spec{Image: "img"}) // must not panic
		_ = Job{ID: p.JobID(), Owner: p.Owner(), OwnerProof: in}.VerifyOwner()
	})
}

// BenchmarkVerifyOwner is one record's check, uncached: what a reader pays
// once per record (app caches the result by record).
func BenchmarkVerifyOwner(b *testing.B) {
	s, owner := testSigner(1)
	proof, _ := s.Prove("NODE", Spec{Image: "pytorch:2", GPUs: 2})
	p, _ := DecodeProof(proof)
	j := Job{ID: p.JobID(), Node: "NODE", Owner: owner, Spec: Spec{Image: "pytorch:2", GPUs: 2}, OwnerProof: proof}
	for b.Loop() {
		if err := j.VerifyOwner(); err != nil {
			b.Fatal(err)
		}
	}
}
