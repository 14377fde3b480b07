//go:build linux

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// TestTrust attacks a pool as its own people and its neighbours would: an
// admin, two members, a viewer, a member that gets removed and a stranger
// on the LAN, against lab1 (the pool's creator, with its own dockerd).
// Each subtest is an attack that must fail and the allowed path beside it.
func TestTrust(t *testing.T) {
	l := newLAN(t, "lab1", "admin", "member", "member2", "viewer", "removed", "stranger")
	lab1, admin, member, member2 := l.host("lab1"), l.host("admin"), l.host("member"), l.host("member2")
	viewer, removed, stranger := l.host("viewer"), l.host("removed"), l.host("stranger")
	lab1.env = append(lab1.env, "LABPOOL_SIMULATE_GPUS=2")
	dk := lab1.docker()
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	ids := map[*host]string{}
	for _, h := range l.hosts {
		s, err := h.client().Self(context.Background())
		if err != nil {
			t.Fatalf("%s: self: %v", h.name, err)
		}
		ids[h] = s.ID
	}
	members := []*host{lab1, admin, member, member2, viewer, removed}
	const img = "labpool-test/busybox:1"

	memberCode := lastLine(mustCLI(t, lab1, "pool", "create"))
	invite := func(args ...string) string {
		t.Helper()
		return lastLine(mustCLI(t, lab1, append([]string{"pool", "invite"}, args...)...))
	}
	codes := map[*host]string{
		admin:   invite("--role", "admin", "--uses", "1", "--expires", "1h"),
		member:  memberCode,
		member2: memberCode,
		viewer:  invite("--role", "viewer", "--uses", "1", "--expires", "1h"),
		// Its own invite, so that the removal revokes this one alone.
		removed: invite("--role", "member", "--uses", "5", "--expires", "1h"),
	}
	roles := map[string]string{ids[lab1]: "owner", ids[admin]: "admin", ids[member]: "member",
		ids[member2]: "member", ids[viewer]: "viewer", ids[removed]: "member"}

	t.Run("join with invites of each role", func(t *testing.T) {
		for _, h := range []*host{admin, member, member2, viewer, removed} {
			if out, errOut, code := h.cli("pool", "join", codes[h], lab1.ip+":7420"); code != 0 {
				t.Fatalf("%s: pool join: exit %d: %s%s", h.name, code, out, errOut)
			}
		}
		for _, h := range members {
			waitFor(t, 20*time.Second, h.name+" shows every member with its role", func() error {
				return hasRoles(h, roles)
			})
		}
		out := mustCLI(t, viewer, "pool", "members", "--json")
		var st trustStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Members) != len(members) {
			t.Errorf("pool members --json on the viewer: %v: %s", err, out)
		}
		for _, h := range members[1:] {
			waitFor(t, 20*time.Second, h.name+" follows lab1", func() error { return liveNodes(h, "lab1") })
		}
	})
	if t.Failed() {
		return
	}

	t.Run("forged membership records are dropped", func(t *testing.T) {
		testForgedRecords(t, lab1, member, ids[admin], members, roles)
	})

	t.Run("out of role", func(t *testing.T) {
		for _, c := range []struct {
			who  *host
			args []string
			want []string // the rule, in one of these words
		}{
			{member, []string{"pool", "remove", ids[member2]}, []string{"admins and owners"}},
			{member, []string{"pool", "role", ids[member], "admin"}, []string{"admins and owners"}},
			{member, []string{"pool", "role", ids[member], "owner"}, []string{"admins and owners", "owners"}},
			{member, []string{"pool", "invite"}, []string{"admins and owners"}},
			{viewer, []string{"pool", "invite", "--role", "viewer"}, []string{"admins and owners"}},
			{admin, []string{"pool", "remove", ids[lab1]}, []string{"cannot remove an owner", "creator"}},
			{admin, []string{"pool", "role", ids[admin], "owner"}, []string{"an admin cannot", "owners"}},
			{admin, []string{"pool", "invite", "--role", "admin"}, []string{"an admin cannot", "owners"}},
		} {
			out, errOut, code := c.who.cli(c.args...)
			refusedNaming(t, c.who.name+": labpool "+strings.Join(c.args, " "), out, errOut, code, c.want...)
		}
		// The allowed path: an admin manages a member's role.
		mustCLI(t, admin, "pool", "role", ids[member2], "viewer")
		waitFor(t, 5*time.Second, "member2 a viewer on lab1", func() error {
			return hasRoles(lab1, map[string]string{ids[member2]: "viewer"})
		})
		mustCLI(t, admin, "pool", "role", ids[member2], "member")
		for _, h := range members {
			waitFor(t, 5*time.Second, h.name+" shows the roles back", func() error { return hasRoles(h, roles) })
		}
		for _, h := range members {
			if err := hasRoles(h, roles); err != nil {
				t.Errorf("after the refused changes: %s: %v", h.name, err)
			}
		}
		// The allowed path: an admin makes a viewer invite, the owner
		// revokes it.
		code := lastLine(mustCLI(t, admin, "pool", "invite", "--role", "viewer", "--uses", "1"))
		if code == "" {
			t.Fatal("the admin's invite printed no code")
		}
		waitFor(t, 5*time.Second, "the admin's invite on lab1", func() error {
			var invs []struct {
				ID, Role, State string
			}
			if err := json.Unmarshal([]byte(mustCLI(t, lab1, "pool", "invites", "--json")), &invs); err != nil {
				return fmt.Errorf("pool invites --json: %v", err)
			}
			for _, in := range invs {
				if in.Role == "viewer" && in.State == "active" {
					mustCLI(t, lab1, "pool", "revoke", in.ID)
					return nil
				}
			}
			return fmt.Errorf("no active viewer invite among %d", len(invs))
		})
	})

	t.Run("jobs belong to their owner", func(t *testing.T) {
		id := trRun(t, member, "--node", "lab1", "--name", "secretjob", "-e", "TOKEN=s3cret", "--port", "8080",
			img, "sh", "-c", "echo token is $TOKEN; exec httpd -f -p 8080 -h /www")
		trWaitJob(t, member, id, "running")
		waitFor(t, 10*time.Second, "member2 lists the job", func() error {
			out, _, _ := member2.cli("ps", "--json")
			if !strings.Contains(out, id) {
				return fmt.Errorf("not listed: %s", out)
			}
			return nil
		})
		for _, args := range [][]string{{"stop", id}, {"rm", id}, {"logs", id}, {"stats", id}, {"open", id, "8080"}} {
			out, errOut, code := member2.cli(args...)
			refusedNaming(t, "member2: labpool "+strings.Join(args, " "), out, errOut, code, "owner")
			if args[0] == "open" && code == 0 {
				page, err := exec.Command("ip", "netns", "exec", member2.ns, "curl", "-sf", "--max-time", "5", lastLine(out)).CombinedOutput()
				t.Logf("member2 through the tunnel it opened: %v %q", err, page)
				if strings.Contains(string(page), "labpool test page") {
					t.Errorf("member2 reached member's job through a tunnel")
				}
			}
			if strings.Contains(out+errOut, "s3cret") {
				t.Errorf("member2: labpool %v showed the job's secret", args)
			}
		}
		if j := trJob(t, member, id); j.State != "running" {
			t.Errorf("after member2's attempts the job is %s", j.State)
		}
		for _, h := range []*host{member2, viewer, admin} {
			out := mustCLI(t, h, "ps", "--json")
			if !strings.Contains(out, id) || strings.Contains(out, "s3cret") {
				t.Errorf("%s: ps --json lists the job %v, shows its env %v: %s", h.name,
					strings.Contains(out, id), strings.Contains(out, "s3cret"), out)
			}
		}
		if out := mustCLI(t, member, "logs", id); !strings.Contains(out, "token is s3cret") {
			t.Errorf("the owner reads its job's logs: %q", out)
		}
		for _, h := range []*host{admin, member2, viewer} {
			if where := grepData(t, h, "s3cret"); where != "" {
				t.Errorf("%s holds the job's environment value in %s", h.name, where)
			}
		}
		if out, errOut, code := admin.cli("stop", id); code != 0 {
			t.Errorf("the admin stops member's job: exit %d: %s%s", code, out, errOut)
		}
		trWaitJob(t, member, id, "exited")
	})

	t.Run("a job's setuid file in a share gives no host root", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "results")
		os.MkdirAll(dir, 0o777)
		os.Chmod(dir, 0o777)
		mustCLI(t, lab1, "share", "--rw", "results", dir)
		defer lab1.cli("unshare", "results")
		waitFolder(t, member, "lab1", "results")
		id := trRun(t, member, "--node", "lab1", "--mount", "results:/out:rw", img, "sh", "-c",
			"id; cp /bin/busybox /out/sh; touch /out/plain; chown 0:0 /out/sh /out/plain; chmod 6755 /out/sh; chmod 2775 /out/plain; ls -ln /out")
		trWaitJob(t, member, id, "exited")
		logs, errOut, _ := member.cli("logs", id)
		t.Logf("the job's output:\n%s%s", logs, errOut)
		for _, name := range []string{"sh", "plain"} {
			p := filepath.Join(dir, name)
			out, err := exec.Command("ip", "netns", "exec", lab1.ns, "stat", "-c", "%u %g %#a", p).CombinedOutput()
			if err != nil {
				t.Errorf("stat %s on lab1: %v: %s (the job could not write into its rw share)", name, err, out)
				continue
			}
			f := strings.Fields(string(out))
			mode, _ := strconv.ParseUint(f[2], 0, 32)
			t.Logf("%s on the host: uid %s gid %s mode %#o", name, f[0], f[1], mode)
			if f[0] == "0" {
				t.Errorf("%s written by a job is owned by root on the host", name)
			}
			if mode&0o6000 != 0 {
				t.Errorf("%s written by a job carries setuid/setgid bits on the host: %#o", name, mode)
			}
		}
	})

	t.Run("an image tag cannot be replaced", func(t *testing.T) {
		before := imageID(t, dk, img)
		dir := t.TempDir()
		evil := filepath.Join(dir, "evil.tar")
		forgedImage(t, dk, evil, img)
		out, errOut, code := member.cli("image", "load", "lab1", evil)
		refusedNaming(t, "loading an archive tagged "+img, out, lastLine(errOut), code, "already names another image", "exists", "(rule: a member loads images only under member/")
		if after := imageID(t, dk, img); after != before {
			t.Errorf("the tag %s moved from %s to %s", img, before, after)
			// Put it back, or every later job runs the forged image.
			if out, err := exec.Command("docker", "-H", dk, "tag", before, img).CombinedOutput(); err != nil {
				t.Fatalf("docker tag %s %s: %v: %s", before, img, err, out)
			}
		}
		// The allowed path: a new tag loads.
		fresh := filepath.Join(dir, "fresh.tar")
		forgedImage(t, dk, fresh, memberPrefix(t, member)+"labpool-test/fresh:1")
		if out, errOut, code := member.cli("image", "load", "lab1", fresh); code != 0 {
			t.Errorf("loading a new tag: exit %d: %s%s", code, out, errOut)
		}
	})

	t.Run("machine policy", func(t *testing.T) {
		mustCLI(t, lab1, "policy", "--launch", "admins")
		defer lab1.cli("policy", "--launch", "members", "--max-gpus-per-member", "0")
		out, errOut, code := member.cli("run", "--node", "lab1", img, "true")
		refusedNaming(t, "member's launch under --launch admins", out, errOut, code, "policy")
		trRun(t, admin, "--node", "lab1", img, "sh", "-c", "exit 0")
		mustCLI(t, lab1, "policy", "--launch", "nobody")
		out, errOut, code = admin.cli("run", "--node", "lab1", img, "true")
		refusedNaming(t, "admin's launch under --launch nobody", out, errOut, code, "policy")
		mustCLI(t, lab1, "policy", "--launch", "members", "--max-gpus-per-member", "1")
		if out := mustCLI(t, lab1, "policy", "--json"); !strings.Contains(out, "members") {
			t.Errorf("policy --json: %s", out)
		}
		first := trRun(t, member, "--node", "lab1", "--gpus", "1", img, "sleep", "600")
		defer member.cli("stop", first)
		out, errOut, code = member.cli("run", "--node", "lab1", "--gpus", "1", img, "sleep", "600")
		refusedNaming(t, "member's second GPU under --max-gpus-per-member 1", out, errOut, code, "max-gpus-per-member", "policy")
		trRun(t, member2, "--node", "lab1", "--gpus", "1", img, "sh", "-c", "exit 0")
	})

	t.Run("share members checked on every use", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "private")
		os.MkdirAll(dir, 0o777)
		os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("for the admin only\n"), 0o644)
		mustCLI(t, lab1, "share", "--rw", "--members", ids[admin], "private", dir)
		defer lab1.cli("unshare", "private")
		waitFor(t, 10*time.Second, "the admin lists lab1:private", func() error {
			if out, errOut, code := admin.cli("ls", "lab1:private"); code != 0 || !strings.Contains(out, "secret.txt") {
				return fmt.Errorf("exit %d %s%s", code, out, errOut)
			}
			return nil
		})
		local := filepath.Join(base, "member-side")
		os.MkdirAll(local, 0o755)
		mine := filepath.Join(local, "planted.txt")
		os.WriteFile(mine, []byte("planted\n"), 0o644)
		for _, args := range [][]string{
			{"ls", "lab1:private"},
			{"cp", "lab1:private/secret.txt", local + "/"},
			{"cp", mine, "lab1:private/"},
			{"run", "--node", "lab1", "--mount", "private:/p", img, "cat", "/p/secret.txt"},
		} {
			out, errOut, code := member.cli(args...)
			refusedNaming(t, "member: labpool "+strings.Join(args, " "), out, errOut, code, "member", "not shared with you")
			if strings.Contains(out, "secret.txt") || strings.Contains(out, "for the admin only") {
				t.Errorf("member: labpool %v showed the share's content: %s", args, out)
			}
		}
		if _, err := os.Stat(filepath.Join(local, "secret.txt")); err == nil {
			t.Errorf("the member received a file of a share it is not a member of")
		}
		if _, err := os.Stat(filepath.Join(dir, "planted.txt")); err == nil {
			t.Errorf("the member wrote into a share it is not a member of")
		}
		for _, c := range []struct {
			h          *host
			name, path string
		}{{lab1, "etc", "/etc"}, {lab1, "root", "/"}, {lab1, "usr", "/usr/"}, {member, "etc", "/etc"}, {lab1, "data", lab1.data}} {
			out, errOut, code := c.h.cli("share", c.name, c.path)
			refusedNaming(t, c.h.name+": labpool share "+c.name+" "+c.path, out, errOut, code, "")
			if code == 0 {
				c.h.cli("unshare", c.name)
			}
		}
	})

	t.Run("viewer watches", func(t *testing.T) {
		out, errOut, code := viewer.cli("run", "--node", "lab1", img, "true")
		refusedNaming(t, "viewer: labpool run", out, errOut, code, "viewers cannot launch jobs")
		dir := t.TempDir()
		out, errOut, code = viewer.cli("share", "mine", dir)
		refusedNaming(t, "viewer: labpool share", out, errOut, code, "viewer")
		if code == 0 {
			viewer.cli("unshare", "mine")
		}
		mustCLI(t, viewer, "pool", "members")
		mustCLI(t, viewer, "ps")
		mustCLI(t, viewer, "nodes")
	})

	t.Run("stranger", func(t *testing.T) {
		for _, h := range members {
			res, err := stranger.client().Probe(context.Background(), h.ip+":7420")
			if err != nil {
				t.Errorf("probe %s from the stranger: %v", h.name, err)
				continue
			}
			if res.Member || res.Status != http.StatusForbidden {
				t.Errorf("%s answers the stranger %d (%s), want 403", h.name, res.Status, res.Message)
			}
		}
		// A well-formed code of this pool with the wrong secret: it has to
		// reach lab1 to be refused.
		wrong, err := pool.ParseCode(memberCode)
		if err != nil {
			t.Fatalf("parse the invite code: %v", err)
		}
		wrong.Secret[0] ^= 0xff
		out, errOut, code := stranger.cli("pool", "join", wrong.String(), lab1.ip+":7420")
		refusedNaming(t, "stranger: join with a wrong code", out, errOut, code, "code")
		res, err := stranger.client().Probe(context.Background(), lab1.ip+":7420")
		if err != nil || res.Member {
			t.Errorf("after its join, lab1 answers the stranger %+v (%v)", res, err)
		}
		if err := hasRoles(lab1, roles); err != nil {
			t.Errorf("after the stranger: %v", err)
		}
	})

	t.Run("removal", func(t *testing.T) {
		testRemoval(t, l, lab1, removed, members, ids[removed], codes[removed])
	})
}

// testForgedRecords has member write membership records into its own
// replica (a removal of the admin signed with its own key, an owner-signed
// invite edited to grant admin, a raise of itself to owner at the highest
// version) and a tampered member table, then serve them to the pool from
// its own identity: every other member keeps the true roles, and lab1
// logs each refused record once.
func testForgedRecords(t *testing.T, lab1, member *host, adminID string, members []*host, roles map[string]string) {
	member.kill()
	forged := forgeRecords(t, member.data, adminID)
	member.agent()
	member.waitDaemon()
	waitFor(t, 20*time.Second, "lab1 follows the member again", func() error { return liveNodes(lab1, "member") })
	// The store path: the member's own daemon must not act on them either.
	for _, h := range members {
		if err := hasRoles(h, roles); err != nil {
			t.Errorf("after the member restarted on a forged replica: %s: %v", h.name, err)
		}
	}

	// The wire path: what a modified labpool on the member would relay.
	member.kill()
	srv := serveForgedRecords(t, member)
	defer srv()
	waitFor(t, 15*time.Second, "lab1 to log the forged records", func() error {
		for _, f := range forged {
			if n := refusalLines(lab1.logText(), f.short); n == 0 {
				return fmt.Errorf("no refusal of %s (%s) in lab1's log", f.short, f.what)
			}
		}
		return nil
	})
	// The helper relays them every 300 ms; lab1 logs each once.
	time.Sleep(2 * time.Second)
	for _, f := range forged {
		if n := refusalLines(lab1.logText(), f.short); n != 1 {
			t.Errorf("lab1 logged the refusal of %s (%s) %d times, want once", f.short, f.what, n)
		}
	}
	for _, h := range members {
		if h == member {
			continue
		}
		if err := hasRoles(h, roles); err != nil {
			t.Errorf("after the member relayed forged records: %s: %v", h.name, err)
		}
	}
	srv()
	member.agent()
	member.waitDaemon()
	waitFor(t, 20*time.Second, "lab1 follows the member again", func() error { return liveNodes(lab1, "member") })
}

// refusalLines counts the lines of log that name a record by its short
// hash and say it was refused.
func refusalLines(log, short string) int {
	n := 0
	refused := regexp.MustCompile(`(?i)drop|refus|reject|forged`)
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, short) && refused.MatchString(line) {
			n++
		}
	}
	return n
}

// testRemoval removes a member with a running job on lab1 and checks that
// within 1 s every online member refuses it, that its job is stopped with
// its record kept, and that neither a new identity with its invite nor the
// same identity with a fresh invite gets back in.
func testRemoval(t *testing.T, l *lan, lab1, removed *host, members []*host, id, oldCode string) {
	job := trRun(t, removed, "--node", "lab1", "--name", "removed-job", "labpool-test/busybox:1", "sleep", "1000")
	trWaitJob(t, lab1, job, "running")
	var online []*host
	for _, h := range members {
		if h != removed {
			online = append(online, h)
		}
	}
	for _, h := range online[1:] {
		waitFor(t, 20*time.Second, "the removed member follows "+h.name, func() error { return liveNodes(removed, h.name) })
	}
	mustCLI(t, lab1, "pool", "remove", id)
	start := time.Now()
	var wg sync.WaitGroup
	type reached struct {
		seen, refused       time.Duration
		seenErr, refusedErr error
	}
	got := map[string]*reached{}
	for _, h := range online {
		r := &reached{}
		got[h.name] = r
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.seen, r.seenErr = pollUntil(5*time.Second, 20*time.Millisecond, func() error { return removedOn(h, id) }, start)
		}()
		go func() {
			defer wg.Done()
			r.refused, r.refusedErr = pollUntil(5*time.Second, 100*time.Millisecond, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				res, err := removed.client().Probe(ctx, h.ip+":7420")
				if err == nil && res.Member {
					err = fmt.Errorf("%s serves it", h.name)
				}
				return err
			}, start)
		}()
	}
	wg.Wait()
	// Stop its retries from spending its address's budget of refusals.
	removed.kill()
	for _, h := range online {
		r := got[h.name]
		t.Logf("%s: removal seen after %v, probe refused after %v", h.name, r.seen.Round(time.Millisecond), r.refused.Round(time.Millisecond))
		if r.seenErr != nil || r.refusedErr != nil || r.seen > time.Second || r.refused > time.Second {
			t.Errorf("%s: removal seen after %v (%v), refused after %v (%v); want both within 1 s", h.name, r.seen, r.seenErr, r.refused, r.refusedErr)
		}
	}
	if _, err := pollUntil(10*time.Second, 50*time.Millisecond, func() error {
		j, err := lab1.client().Job(context.Background(), job)
		if err != nil {
			return err
		}
		if j.State == "running" || j.State == "queued" {
			return fmt.Errorf("still %s", j.State)
		}
		return nil
	}, time.Now()); err != nil {
		t.Errorf("the removed member's job on lab1, 10 s after the removal: %v (want stopped, its record kept)", err)
	}

	// A new address too: the old one may have spent its refusals.
	readdress(t, l, removed, 200)
	oldData := removed.data
	removed.data = oldData + "-new"
	removed.agent()
	removed.waitDaemon()
	out, errOut, code := removed.cli("pool", "join", oldCode, lab1.ip+":7420")
	refusedNaming(t, "a new identity joining with the removed member's invite", out, errOut, code, "revoked")
	removed.kill()

	fresh := lastLine(mustCLI(t, lab1, "pool", "invite", "--uses", "1", "--expires", "1h"))
	defer lab1.cli("pool", "revoke", fresh)
	readdress(t, l, removed, 201)
	removed.data = oldData
	removed.agent()
	removed.waitDaemon()
	out, errOut, code = removed.cli("pool", "join", fresh, lab1.ip+":7420")
	refusedNaming(t, "the removed identity joining with a fresh invite", out, errOut, code, "removed")
	for _, h := range online {
		if err := removedOn(h, id); err != nil {
			t.Errorf("after the rejoin attempts: %v", err)
		}
	}
}

// pollUntil calls cond every step until it returns nil or d passes, and
// returns the time since start at which it held, or cond's last error.
func pollUntil(d, step time.Duration, cond func() error, start time.Time) (time.Duration, error) {
	deadline := start.Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return time.Since(start), nil
		}
		time.Sleep(step)
	}
	return 0, err
}

// readdress gives h a new address, last octet n, on its LAN.
func readdress(t testing.TB, l *lan, h *host, n int) {
	t.Helper()
	l.ip("-n", h.ns, "addr", "flush", "dev", "eth0")
	h.ip = fmt.Sprintf("10.231.%d.%d", l.subnet, n)
	l.ip("-n", h.ns, "addr", "add", h.ip+"/24", "dev", "eth0")
}

// refusedNaming checks that a CLI call failed with a message containing
// every word of want (case-insensitive); an empty want only asks for a
// message.
func refusedNaming(t *testing.T, what, out, errOut string, code int, want ...string) {
	t.Helper()
	msg := strings.TrimSpace(errOut)
	if code == 0 {
		t.Errorf("%s: allowed (exit 0): %s%s", what, out, errOut)
		return
	}
	if msg == "" {
		t.Errorf("%s: refused with no message (exit %d)", what, code)
		return
	}
	for _, w := range want {
		if w != "" && strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			t.Logf("%s: refused: %s", what, msg)
			return
		}
	}
	if len(want) == 1 && want[0] == "" {
		t.Logf("%s: refused: %s", what, msg)
		return
	}
	t.Errorf("%s: refused with %q, which does not name the rule (want %q)", what, msg, want)
}

// trustStatus is what GET /api/v1/pool and `pool members --json` answer.
type trustStatus struct {
	PoolID   string        `json:"pool_id"`
	SelfID   string        `json:"self_id"`
	SelfRole string        `json:"self_role"`
	Members  []trustMember `json:"members"`
	Invites  []struct {
		ID   string `json:"id"`
		Uses int    `json:"uses"`
		Used int    `json:"used"`
	} `json:"invites"`
}

type trustMember struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Role    string `json:"role"`
	Removed bool   `json:"removed"`
	Online  bool   `json:"online"`
	Self    bool   `json:"self"`
	Creator bool   `json:"creator"`
}

// poolStatus reads h's view of the pool through its unix socket.
func poolStatus(h *host) (trustStatus, error) {
	var st trustStatus
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(h.data, "labpool.sock"))
	}}
	c := &http.Client{Transport: tr, Timeout: 3 * time.Second}
	resp, err := c.Get("http://labpool/api/v1/pool")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /api/v1/pool: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// hasRoles checks that h lists each device of want, not removed, with its role.
func hasRoles(h *host, want map[string]string) error {
	st, err := poolStatus(h)
	if err != nil {
		return err
	}
	for id, role := range want {
		m, ok := st.member(id)
		switch {
		case !ok:
			return fmt.Errorf("%s does not list %s", h.name, id[:8])
		case m.Removed || m.Role != role:
			return fmt.Errorf("%s lists %s (%s) as %q, removed %v; want %q", h.name, m.Name, id[:8], m.Role, m.Removed, role)
		}
	}
	return nil
}

// removedOn checks that h lists id as removed, or no longer lists it.
func removedOn(h *host, id string) error {
	st, err := poolStatus(h)
	if err != nil {
		return err
	}
	if st.PoolID == "" {
		return fmt.Errorf("%s is in no pool", h.name)
	}
	if m, ok := st.member(id); ok && !m.Removed {
		return fmt.Errorf("%s lists %s as %s", h.name, m.Name, m.Role)
	}
	return nil
}

func (s trustStatus) member(id string) (trustMember, bool) {
	for _, m := range s.Members {
		if m.ID == id {
			return m, true
		}
	}
	return trustMember{}, false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// trRun launches a job from h and returns its ID.
func trRun(t *testing.T, h *host, args ...string) string {
	t.Helper()
	return lastLine(mustCLI(t, h, append([]string{"run"}, args...)...))
}

type trustJob struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Error string `json:"error"`
}

func trJob(t *testing.T, h *host, id string) trustJob {
	t.Helper()
	j, err := h.client().Job(context.Background(), id)
	if err != nil {
		t.Fatalf("%s: job %s: %v", h.name, id, err)
	}
	return trustJob{ID: j.ID, State: string(j.State), Error: j.Error}
}

func trWaitJob(t *testing.T, h *host, id, state string) {
	t.Helper()
	waitFor(t, 20*time.Second, "job "+id+" "+state, func() error {
		j, err := h.client().Job(context.Background(), id)
		if err != nil {
			return err
		}
		if string(j.State) != state {
			return fmt.Errorf("state %s (%s)", j.State, j.Error)
		}
		return nil
	})
}

// waitFolder waits until h lists node's shared folder name.
func waitFolder(t *testing.T, h *host, node, name string) {
	t.Helper()
	waitFor(t, 10*time.Second, node+":"+name+" listed on "+h.name, func() error {
		fs, err := h.client().Folders(context.Background())
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.NodeName == node && f.Name == name {
				return nil
			}
		}
		return fmt.Errorf("not among %d folders", len(fs))
	})
}

// grepData returns the first file of h's data directory that contains s.
func grepData(t *testing.T, h *host, s string) string {
	t.Helper()
	entries, err := os.ReadDir(h.data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(h.data, e.Name()))
		if err == nil && bytes.Contains(b, []byte(s)) {
			return e.Name()
		}
	}
	return ""
}

// imageID returns the ID an engine's tag points to.
func imageID(t *testing.T, sock, ref string) string {
	t.Helper()
	out, err := exec.Command("docker", "-H", sock, "image", "inspect", "-f", "{{.Id}}", ref).CombinedOutput()
	if err != nil {
		t.Fatalf("docker image inspect %s: %v: %s", ref, err, out)
	}
	return strings.TrimSpace(string(out))
}

// killGroup ends a process started with Setpgid and its children.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}
}

// forgeEnv names the member's data directory to the test binary re-run as
// a forging member (see init).
const forgeEnv = "LABPOOL_E2E_FORGE_SERVE"

func init() {
	if dir := os.Getenv(forgeEnv); dir != "" {
		if err := serveForged(dir); err != nil {
			fmt.Fprintln(os.Stderr, "serve forged records:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// forgedRecord is a record a member wrote into its own replica.
type forgedRecord struct {
	short string // hex of the first 4 bytes of its hash, as logs name it
	what  string
}

// forgeRecords writes, into the replica in dir (its daemon stopped),
// three membership records its device has no right to make, and tampers
// with the member table derived from them.
func forgeRecords(t *testing.T, dir, adminID string) []forgedRecord {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.PoolRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := id.Cert.PrivateKey.(ed25519.PrivateKey)
	self := id.ID.String()
	var genesis, adminJoin, selfJoin pool.Record
	var top uint64
	recs := make([]pool.Record, 0, len(rows))
	for _, row := range rows {
		var r pool.Record
		if err := json.Unmarshal(row.Data, &r); err != nil {
			t.Fatalf("stored pool record %s: %v", row.Hash, err)
		}
		recs = append(recs, r)
		top = max(top, r.Version)
		switch {
		case r.Kind == pool.KindGenesis:
			genesis = r
		case r.Kind == pool.KindJoin && r.Subject == adminID:
			adminJoin = r
		case r.Kind == pool.KindJoin && r.Subject == self:
			selfJoin = r
		}
	}
	var selfInvite pool.Record
	for _, r := range recs {
		if r.Kind == pool.KindInvite && r.Subject == selfJoin.Invite {
			selfInvite = r
		}
	}
	if genesis.Kind == "" || adminJoin.Kind == "" || selfInvite.Kind == "" || key == nil {
		t.Fatalf("the member's replica lacks the genesis, the admin's join or its own invite among %d records", len(rows))
	}
	held, err := pool.Verify(genesis.Pool, recs, time.Now())
	if err != nil {
		t.Fatalf("the member's replica does not verify: %v", err)
	}
	sign := func(r pool.Record) pool.Record {
		r.Prev = held.Heads()
		r.Sig = ed25519.Sign(key, r.SigningBytes())
		return r
	}
	// A row copied and edited: the owner's invite, now granting admin.
	edited := selfInvite
	edited.Role, edited.Version = pool.RoleAdmin, top+2
	forged := []struct {
		r    pool.Record
		what string
	}{
		{sign(pool.Record{Pool: genesis.Pool, Kind: pool.KindRemove, Subject: adminID, Version: top + 1,
			Invite: adminJoin.Invite, Signer: self}), "removal of the admin signed by a member"},
		{edited, "owner's invite edited to grant admin"},
		{sign(pool.Record{Pool: genesis.Pool, Kind: pool.KindRole, Subject: self, Role: pool.RoleOwner,
			Version: math.MaxInt64, Signer: self}), "a member raising itself to owner at the highest version"},
	}
	add := rows // SavePool replaces every record: keep the true ones
	var out []forgedRecord
	for _, f := range forged {
		data, err := json.Marshal(f.r)
		if err != nil {
			t.Fatal(err)
		}
		h := f.r.Hash()
		add = append(add, store.PoolRecord{Hash: hex.EncodeToString(h[:]), Version: f.r.Version, Data: data})
		out = append(out, forgedRecord{short: hex.EncodeToString(h[:4]), what: f.what})
	}
	table, err := db.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range table {
		switch table[i].ID {
		case adminID:
			table[i].Removed, table[i].Version = true, math.MaxInt64
		case self:
			table[i].Role, table[i].Version = "owner", math.MaxInt64
		}
	}
	if err := db.SavePool(ctx, add, table); err != nil {
		t.Fatal(err)
	}
	return out
}

// serveForgedRecords runs, in h's namespace and with h's identity, a
// replication server that relays every membership record of h's replica
// (the forged ones too) every 300 ms, as a modified labpool would. It
// returns the function that stops it.
func serveForgedRecords(t *testing.T, h *host) func() {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", h.ns, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), forgeEnv+"="+h.data)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() { killGroup(cmd); t.Logf("forging member's log:\n%s", lastLines(log.String(), 20)) })
	}
	waitFor(t, 10*time.Second, "the forging member serving", func() error {
		if !strings.Contains(log.String(), "serving forged records") {
			return fmt.Errorf("not yet: %s", log.String())
		}
		return nil
	})
	return stop
}

// serveForged is the forging member (run by serveForgedRecords).
func serveForged(dir string) error {
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		return err
	}
	rows, err := db.PoolRecords(context.Background())
	db.Close()
	if err != nil {
		return err
	}
	raws := make([]json.RawMessage, 0, len(rows))
	for _, r := range rows {
		raws = append(raws, r.Data)
	}
	id, err := peer.LoadOrCreate(dir)
	if err != nil {
		return err
	}
	ep, err := transport.New(id, transport.DefaultConfig(), slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(replica.StreamPath, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(os.Stderr, "a follower connected:", r.RemoteAddr)
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(w)
		for {
			if err := enc.Encode(replica.Frame{Pool: raws}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	})
	fmt.Printf("serving forged records (%d) as %s\n", len(raws), id.ID)
	return ep.Serve(context.Background(), mux)
}

// forgedImage writes to path an image archive tagged ref whose image is
// new to the engine at sock: a one-file image made there, saved, removed,
// and retagged in the archive.
func forgedImage(t *testing.T, sock, path, ref string) {
	t.Helper()
	dir := t.TempDir()
	var rootfs bytes.Buffer
	tw := tar.NewWriter(&rootfs)
	body := []byte(fmt.Sprintf("not the image you trust %d\n", time.Now().UnixNano()))
	tw.WriteHeader(&tar.Header{Name: "evil.txt", Mode: 0o644, Size: int64(len(body))})
	tw.Write(body)
	tw.Close()
	src := filepath.Join(dir, "rootfs.tar")
	os.WriteFile(src, rootfs.Bytes(), 0o644)
	const tmp = "labpool-test/forge-src:1"
	saved := filepath.Join(dir, "saved.tar")
	for _, args := range [][]string{{"import", src, tmp}, {"save", "-o", saved, tmp}, {"rmi", tmp}} {
		if out, err := exec.Command("docker", append([]string{"-H", sock}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("docker %v: %v: %s", args, err, out)
		}
	}
	if err := retag(saved, path, ref); err != nil {
		t.Fatal(err)
	}
}

// retag copies the `docker save` archive in to out with its one image
// tagged ref instead.
func retag(in, out, ref string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	var buf bytes.Buffer
	tr, tw := tar.NewReader(f), tar.NewWriter(&buf)
	repo, tag, _ := strings.Cut(ref, ":")
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("read %s: %w", in, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		switch hdr.Name {
		case "manifest.json":
			var m []map[string]any
			if err := json.Unmarshal(data, &m); err != nil || len(m) != 1 {
				return fmt.Errorf("manifest.json of %s: %v", in, err)
			}
			m[0]["RepoTags"] = []string{ref}
			data, _ = json.Marshal(m)
		case "repositories":
			var r map[string]map[string]string
			json.Unmarshal(data, &r)
			var layer string
			for _, tags := range r {
				for _, l := range tags {
					layer = l
				}
			}
			data, _ = json.Marshal(map[string]map[string]string{repo: {tag: layer}})
		}
		hdr.Size = int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		tw.Write(data)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
