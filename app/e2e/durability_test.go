//go:build linux

package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// TestCrashConsistency kills a running agent with SIGKILL while it writes,
// 200 times (LABPOOL_CRASH_ITERATIONS), at a random moment 100 to 300 ms
// after its API answers, and after every kill opens its replica as the
// next start would: PRAGMA integrity_check must pass, and every control
// record whose API call returned must be there: membership (invites made,
// a member's role changed), folder records (shares), alert rules (the
// machine's published alert.rules record), local settings (the machine's
// policy) and, where dockerd is installed, jobs and their GPU grants
// (queued or running). A write in flight at the kill may or may not be there.
// Samples, written every second, may lose the last second only: every
// sample the replica held just before the kill survives it, and in the
// iterations that let the agent run 2.5 s (every 40th), the newest sample is at most
// 2 s older than the kill. LABPOOL_CRASH_SEED replays a run's moments.
func TestCrashConsistency(t *testing.T) {
	iterations := 200
	if v, err := strconv.Atoi(os.Getenv("LABPOOL_CRASH_ITERATIONS")); err == nil && v > 0 {
		iterations = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LABPOOL_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d iterations, LABPOOL_CRASH_SEED=%d", iterations, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	l := newLAN(t, "node", "peer")
	node, peer := l.host("node"), l.host("peer")
	node.env = []string{"LABPOOL_SIMULATE_GPUS=8"}
	withJobs := dockerInstalled()
	if withJobs {
		node.docker()
	} else {
		t.Log("dockerd is not installed: no job records in this run")
	}
	node.agent()
	peer.agent()
	node.waitDaemon()
	peer.waitDaemon()
	joinAll(t, node, peer)
	ctx := context.Background()
	self, err := node.client().Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peerSelf, err := peer.client().Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "peer is a member on node", func() error {
		st, err := node.client().Pool(ctx)
		if err != nil {
			return err
		}
		for _, m := range st.Members {
			if m.ID == peerSelf.ID {
				return nil
			}
		}
		return fmt.Errorf("members: %+v", st.Members)
	})
	shareDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(shareDir, "data.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &crashLedger{invites: map[string]bool{}, shares: map[string]bool{}, jobs: map[string]bool{},
		policy: -1, policyFlight: -1, withJobs: withJobs}
	if st, err := node.client().Pool(ctx); err == nil {
		for _, m := range st.Members {
			if m.ID == peerSelf.ID {
				c.role = m.Role
			}
		}
	}
	replica := filepath.Join(node.data, "replica.db")
	if withJobs {
		// A job holds every GPU, so the launches of the loop queue (their
		// records are written at once, without waiting for a container).
		j, err := node.client().Launch(ctx, app.LaunchRequest{Spec: jobs.Spec{Image: "labpool-test/busybox:1",
			Cmd: []string{"sleep", "3600"}, GPUs: 8}})
		if err != nil {
			t.Fatalf("launch the job holding every GPU: %v", err)
		}
		c.jobs[j.ID] = true
	}

	start := time.Now()
	var writes, longRuns int
	for i := range iterations {
		if i > 0 {
			node.agent()
			node.waitDaemon()
		}
		life := time.Duration(100+rng.IntN(201)) * time.Millisecond
		long := i%40 == 39
		if long {
			life = 2500 * time.Millisecond
			longRuns++
		}
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, w := range c.writers(node, i, shareDir, peerSelf.ID) {
			wg.Go(func() { w(wctx) })
		}
		time.Sleep(life)
		held := newestSample(t, replica, self.ID)
		killed := time.Now()
		node.kill()
		stop()
		wg.Wait()
		writes += c.verify(t, i, replica, self.ID, peerSelf.ID, held, killed, long)
		if t.Failed() {
			t.Fatalf("iteration %d (life %v) failed; replay with LABPOOL_CRASH_SEED=%d", i, life, seed)
		}
	}
	t.Logf("%d kills in %v: %d acknowledged control writes (%d invites, %d shares, %d jobs, role changes, alert rules, policies), all kept; integrity_check ok every time; %d runs of 2.5 s checked the samples",
		iterations, time.Since(start).Round(time.Second), writes, len(c.invites), len(c.shares), len(c.jobs), longRuns)
}

// crashLedger is what the writers had acknowledged, and what was in flight.
type crashLedger struct {
	mu      sync.Mutex
	invites map[string]bool // invite IDs whose creation returned
	shares  map[string]bool // folder names whose share returned
	// policy is the max_gpus_per_member last acknowledged (-1: none yet) and
	// policyFlight the one being written (-1: none).
	policy, policyFlight int
	// role is the peer's role last acknowledged and roleFlight the one
	// being written ("": none).
	role, roleFlight string
	// threshold is the gpu-temp alert rule's threshold last acknowledged
	// (0: none yet) and thresholdFlight the one being written (0: none).
	threshold, thresholdFlight float64
	thresholdAcked             float64         // the last one a call acknowledged
	jobs                       map[string]bool // job IDs whose launch returned
	withJobs                   bool
	next                       int // the next policy value
	nextRule                   int // the next threshold
	written                    int // acknowledged writes of this iteration
}

// writers returns the write loops of iteration i: one invite and one role
// change (membership records, which the pool rewrites whole), two shares,
// and as many policy changes as fit, each loop stopping when ctx ends.
func (c *crashLedger) writers(h *host, i int, dir, peerID string) []func(context.Context) {
	cl := h.client()
	return []func(context.Context){
		func(ctx context.Context) { // membership: an invite
			inv, err := cl.CreateInvite(ctx, app.InviteRequest{Role: "member", Uses: 1, ExpiresSeconds: 3600})
			if err == nil {
				c.ack(func() { c.invites[inv.Invite.ID] = true })
			}
		},
		func(ctx context.Context) { // membership: the peer's role
			c.mu.Lock()
			role := "admin"
			if c.role == "admin" {
				role = "member"
			}
			c.roleFlight = role
			c.mu.Unlock()
			if err := cl.SetRole(ctx, peerID, role); err == nil {
				c.ack(func() { c.role, c.roleFlight = role, "" })
			}
		},
		func(ctx context.Context) { // folder records
			for k := range 2 {
				name := fmt.Sprintf("s%03d-%d", i, k)
				if _, err := cl.Share(ctx, app.ShareRequest{Name: name, Path: dir}); err != nil {
					return
				}
				c.ack(func() { c.shares[name] = true })
			}
		},
		func(ctx context.Context) { // alert rules (published as a record)
			for k := 0; k < 3 && ctx.Err() == nil; k++ {
				c.mu.Lock()
				c.nextRule++
				v := 80 + float64(c.nextRule)/1000
				c.thresholdFlight = v
				c.mu.Unlock()
				ch, err := web.Call[app.AlertRuleChange](ctx, cl, http.MethodPut, "/api/v1/alerts/rules/gpu-temp",
					app.AlertRuleUpdate{Threshold: &v})
				// The call goes to every machine and answers once one has
				// applied it: acknowledged here when this one did.
				if err != nil || !slices.Contains(ch.Applied.Applied, h.name) {
					return
				}
				c.ack(func() { c.threshold, c.thresholdFlight, c.thresholdAcked = v, 0, v })
			}
		},
		func(ctx context.Context) { // jobs and their grants
			if !c.withJobs {
				return
			}
			j, err := cl.Launch(ctx, app.LaunchRequest{Spec: jobs.Spec{Image: "labpool-test/busybox:1",
				Cmd: []string{"sleep", "3600"}, GPUs: 1, Queue: true}})
			if err == nil {
				c.ack(func() { c.jobs[j.ID] = true })
			}
		},
		func(ctx context.Context) { // local settings: the policy
			for ctx.Err() == nil {
				c.mu.Lock()
				c.next++
				n := c.next
				c.policyFlight = n
				c.mu.Unlock()
				if _, err := cl.SetPolicy(ctx, app.PolicyUpdate{MaxGPUsPerMember: &n}); err != nil {
					return
				}
				c.ack(func() { c.policy, c.policyFlight = n, -1 })
			}
		},
	}
}

func (c *crashLedger) ack(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
	c.written++
}

// verify opens the killed agent's replica and checks it; it returns the
// writes acknowledged in this iteration and takes what the replica holds
// as the start of the next.
func (c *crashLedger) verify(t *testing.T, i int, path, self, peerID string, held time.Time, killed time.Time, long bool) int {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(path)
	if err != nil {
		t.Fatalf("iteration %d: open the replica after SIGKILL: %v", i, err)
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		t.Fatalf("iteration %d: integrity_check after SIGKILL: %v", i, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	// Membership: every invite acknowledged, and the peer's role.
	recs, err := db.PoolRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	invites := map[string]bool{}
	for _, r := range recs {
		var pr struct{ Kind, Subject string }
		if json.Unmarshal(r.Data, &pr) == nil && pr.Kind == "invite" {
			invites[pr.Subject] = true
		}
	}
	for id := range c.invites {
		if !invites[id] {
			t.Errorf("iteration %d: acknowledged invite %s lost", i, id)
		}
	}
	members, err := db.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	role := ""
	for _, m := range members {
		if m.ID == peerID {
			role = m.Role
		}
	}
	if role != c.role && (c.roleFlight == "" || role != c.roleFlight) {
		t.Errorf("iteration %d: the peer's role is %q; acknowledged %q (in flight %q)", i, role, c.role, c.roleFlight)
	}
	c.role, c.roleFlight = role, ""

	// Folder records.
	for name := range c.shares {
		if _, ok, err := db.Latest(ctx, self, app.KindFolder, name); err != nil || !ok {
			t.Errorf("iteration %d: acknowledged share %s lost (%v)", i, name, err)
		}
	}

	// Alert rules: the machine keeps them in a local setting, which it
	// writes first, and publishes them as a record, which a start
	// publishes again; thresholds only grow, so nothing acknowledged is
	// lost when the record's is at least the acknowledged one.
	tempThreshold := func(data []byte, wrapped bool) (float64, bool) {
		var rules []struct {
			ID        string  `json:"id"`
			Threshold float64 `json:"threshold"`
		}
		if wrapped {
			var st struct {
				Rules json.RawMessage `json:"rules"`
			}
			if json.Unmarshal(data, &st) != nil {
				return 0, false
			}
			data = st.Rules
		}
		if json.Unmarshal(data, &rules) != nil {
			return 0, false
		}
		for _, r := range rules {
			if r.ID == "gpu-temp" {
				return r.Threshold, true
			}
		}
		return 0, false
	}
	if v, ok, err := db.Setting(ctx, "alerts.rules"); err != nil {
		t.Fatal(err)
	} else if th, found := tempThreshold([]byte(v), false); ok && found {
		// Thresholds only grow. A call may land here and still go
		// unacknowledged (it answered once another machine applied it), so
		// the setting may hold any threshold sent since the acknowledged one.
		if sent := 80 + float64(c.nextRule)/1000; c.threshold != 0 && (th < c.threshold || th > sent) {
			t.Errorf("iteration %d: gpu-temp threshold %v; acknowledged %v (the newest sent %v)", i, th, c.threshold, sent)
		}
		if c.threshold != 0 || th > 80 {
			c.threshold = th
		}
	} else if c.threshold != 0 {
		t.Errorf("iteration %d: the alert rules are gone; threshold %v was acknowledged", i, c.threshold)
	}
	if rec, ok, err := db.Latest(ctx, self, app.KindAlertRules, ""); err != nil {
		t.Fatal(err)
	} else if th, found := tempThreshold(rec.Data, true); c.thresholdAcked != 0 && (!ok || !found || th < c.thresholdAcked) {
		t.Errorf("iteration %d: published gpu-temp threshold %v (record %v); acknowledged %v", i, th, ok, c.thresholdAcked)
	}
	c.thresholdFlight = 0

	// Jobs (a job's record holds its grant: the GPUs it was given).
	for id := range c.jobs {
		if _, ok, err := db.Latest(ctx, self, app.KindJob, id); err != nil || !ok {
			t.Errorf("iteration %d: acknowledged job %s lost (%v)", i, id, err)
		}
	}

	// Local settings.
	v, _, err := db.Setting(ctx, "policy")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		MaxGPUsPerMember int `json:"max_gpus_per_member"`
	}
	stored := -1
	if v != "" && json.Unmarshal([]byte(v), &p) == nil {
		stored = p.MaxGPUsPerMember
	}
	if stored != c.policy && stored != c.policyFlight {
		t.Errorf("iteration %d: policy max_gpus_per_member = %d; acknowledged %d (in flight %d)", i, stored, c.policy, c.policyFlight)
	}
	c.policy, c.policyFlight = stored, -1

	// Samples.
	latest, err := db.LatestByKind(ctx, "sample.1s")
	if err != nil {
		t.Fatal(err)
	}
	var newest time.Time
	for _, r := range latest {
		if r.Origin == self {
			newest = r.Time
		}
	}
	if newest.Before(held) {
		t.Errorf("iteration %d: newest sample %v; the replica held one of %v before the kill", i, newest, held)
	}
	if long && killed.Sub(newest) > 2*time.Second {
		t.Errorf("iteration %d: newest sample %v is %v older than the kill: more than the last second lost", i, newest, killed.Sub(newest))
	}
	n := c.written
	c.written = 0
	return n
}

// newestSample is the time of the newest sample of origin in the replica
// at path, read without writing (the agent is running).
func newestSample(t *testing.T, path, origin string) time.Time {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ms sql.NullInt64
	err = db.QueryRow(`SELECT MAX(time_ms) FROM records WHERE origin = ? AND kind = 'sample.1s'`, origin).Scan(&ms)
	if err != nil {
		t.Fatalf("read the newest sample: %v", err)
	}
	if !ms.Valid {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int64)
}

// dockerInstalled reports whether h.docker can start an engine here.
func dockerInstalled() bool {
	_, err := exec.LookPath("dockerd")
	return err == nil
}
