//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// TestTrustReplica is the replication attacks of a member against real
// agents: a mute flood (an expiry of 9999, many large mutes) that must not
// silence lab1 forever nor grow its published alert.rules past its cap, a
// record over its cap and of unknown kinds that must not stall the
// member's stream, and an alert forged "about" lab1 that must not be
// listed as lab1's.
func TestTrustReplica(t *testing.T) {
	l := newLAN(t, "lab1", "member", "watcher")
	lab1, member, watcher := l.host("lab1"), l.host("member"), l.host("watcher")
	lab1.env = append(lab1.env, "LABPOOL_SIMULATE_GPUS=1")
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
	code := lastLine(mustCLI(t, lab1, "pool", "create"))
	for _, h := range []*host{member, watcher} {
		mustCLI(t, h, "pool", "join", code, lab1.ip+":7420")
	}
	for _, h := range l.hosts {
		waitFor(t, 30*time.Second, h.name+" follows the others", func() error {
			var others []string
			for _, o := range l.hosts {
				if o != h {
					others = append(others, o.name)
				}
			}
			return liveNodes(h, others...)
		})
	}

	t.Run("mute flood", func(t *testing.T) {
		out := runAttack(t, member, "mute", ids[lab1], lab1.ip+":7420")
		for _, want := range []string{
			"9999: 400 refused: mute until 9999-01-01T00:00:00Z: more than 30 days ahead (rule: a mute ends within 30 days)",
			"large: 150 refused, 0 taken",
			"flood: 64 taken, 86 refused (rule: at most 64 mutes on a machine)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the attack's report lacks %q:\n%s", want, out)
			}
		}
		var size int
		if _, err := fmt.Sscanf(lastLineWith(out, "state: "), "state: %d bytes", &size); err != nil {
			t.Fatalf("no state size in the report: %v\n%s", err, out)
		}
		if k, _ := schema.Lookup(schema.KindAlertRules); size == 0 || size > k.MaxData {
			t.Errorf("lab1 publishes %d bytes of alert state; want under alert.rules's cap %d", size, k.MaxData)
		}
		// lab1's records still flow: its telemetry is live on the others.
		for _, h := range []*host{member, watcher} {
			waitFor(t, 10*time.Second, h.name+" sees lab1 live after the flood", func() error { return liveNodes(h, "lab1") })
		}
	})

	t.Run("oversized record and forged alert", func(t *testing.T) {
		member.kill()
		stop := serveAttack(t, member, ids[lab1])
		defer stop()
		// The frame after the refused records reaches every member.
		for _, h := range []*host{lab1, watcher} {
			waitFor(t, 20*time.Second, h.name+" stores the record after the refused ones", func() error {
				if grepData(t, h, afterMarker) == "" {
					return fmt.Errorf("no %s in %s's replica", afterMarker, h.name)
				}
				return nil
			})
			if f := grepData(t, h, oversizedMarker); f != "" {
				t.Errorf("%s holds the oversized record (in %s)", h.name, f)
			}
			if f := grepData(t, h, junkMarker); f != "" {
				t.Errorf("%s holds the record of an unknown kind (in %s)", h.name, f)
			}
			if n := strings.Count(h.logText(), "a peer's record refused"); n < 1 || n > 2 {
				t.Errorf("%s logged %d refusals; want one per rule broken (kinds, caps)", h.name, n)
			}
			as, err := h.client().Alerts(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range as {
				if strings.Contains(a.Message, forgedMarker) || a.ID == forgedAlertID {
					t.Errorf("%s lists the forged alert: %+v", h.name, a)
				}
			}
		}
	})
}

// Markers of the records the attacking member serves.
const (
	forgedMarker    = "forged-by-the-member"
	forgedAlertID   = "gpu-temp.gpu0.1"
	oversizedMarker = "oversized-record-marker"
	junkMarker      = "junk-kind-marker"
	afterMarker     = "after-the-refused-marker"
)

// attackEnv runs this test binary as the attacking member (see init).
const attackEnv = "LABPOOL_E2E_REPLICA_ATTACK"

func init() {
	if v := os.Getenv(attackEnv); v != "" {
		if err := attack(strings.Split(v, "|")); err != nil {
			fmt.Fprintln(os.Stderr, "replica attack:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// runAttack runs an attack to its end in h's namespace with h's identity
// and returns what it printed.
func runAttack(t *testing.T, h *host, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", h.ns, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), attackEnv+"="+strings.Join(append([]string{args[0], h.data}, args[1:]...), "|"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("attack %s: %v\n%s", args[0], err, out)
	}
	return string(out)
}

// serveAttack serves, in h's namespace with h's identity (its daemon
// stopped), a replication stream of forged and oversized records; it
// returns the function that stops it.
func serveAttack(t *testing.T, h *host, target string) func() {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", h.ns, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), attackEnv+"=serve|"+h.data+"|"+target)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() { killGroup(cmd); t.Logf("attacking member's log:\n%s", lastLines(log.String(), 20)) })
	}
}

func lastLineWith(s, prefix string) string {
	out := ""
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = l
		}
	}
	return out
}

// attack is the attacking member: args are the mode, its data directory,
// and the mode's own.
func attack(args []string) error {
	dir := args[1]
	id, err := peer.LoadOrCreate(dir)
	if err != nil {
		return err
	}
	cfg := transport.DefaultConfig()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	switch args[0] {
	case "mute":
		cfg.Listen = ":0" // beside the member's own daemon
		ep, err := transport.New(id, cfg, log)
		if err != nil {
			return err
		}
		target, err := peer.ParseID(args[2])
		if err != nil {
			return err
		}
		return muteFlood(ep.Client(target, []string{args[3]}), target.String())
	case "serve":
		return serveOversized(dir, args[2], id, cfg, log)
	}
	return fmt.Errorf("unknown attack %q", args[0])
}

// muteFlood asks the target for a mute until 9999, 150 mutes of 60 KB,
// then 150 distinct mutes, and prints what it answered and the size of the
// state it publishes.
func muteFlood(hc *http.Client, target string) error {
	post := func(body any) (int, string, error) {
		b, _ := json.Marshal(body)
		resp, err := hc.Post("https://node/v1/alerts/mute", "application/json", bytes.NewReader(b))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		var e struct{ Message string }
		if json.Unmarshal(msg, &e) == nil && e.Message != "" {
			return resp.StatusCode, e.Message, nil
		}
		return resp.StatusCode, string(msg), nil
	}
	type mute struct {
		Node  string    `json:"node"`
		Rule  string    `json:"rule"`
		GPU   *int      `json:"gpu"`
		Until time.Time `json:"until"`
	}
	status, msg, err := post(mute{Node: target, Rule: "gpu-temp", Until: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	fmt.Printf("9999: %d %s\n", status, msg)
	soon := time.Now().Add(24 * time.Hour)
	var taken, refused int
	for i := range 150 {
		node := fmt.Sprintf("%05d%s", i, strings.Repeat("N", 60<<10))
		if status, _, err := post(mute{Node: node, Rule: "gpu-temp", Until: soon}); err != nil {
			return err
		} else if status == http.StatusOK {
			taken++
		} else {
			refused++
		}
	}
	fmt.Printf("large: %d refused, %d taken\n", refused, taken)
	// Distinct mutes the node may take: its GPU and each rule, then
	// offline mutes of made-up members (refused: not members).
	taken, refused = 0, 0
	rules := []string{"gpu-temp", "gpu-util", "gpu-mem", "gpu-power", "idle-allocation", "gpu-health", "gpu-throttle", "folder-disk", "host-cpu", "host-mem"}
	last := ""
	for i := range 150 {
		gpu := 0
		m := mute{Node: target, Rule: fmt.Sprintf("%s-%d", rules[i%len(rules)], i), Until: soon}
		if i%2 == 0 {
			m.GPU = &gpu
		}
		status, msg, err := post(m)
		if err != nil {
			return err
		}
		if status == http.StatusOK {
			taken++
		} else {
			refused++
			last = msg
		}
	}
	rule := ""
	if i := strings.LastIndex(last, "(rule: "); i >= 0 {
		rule = last[i:]
	}
	fmt.Printf("flood: %d taken, %d refused %s\n", taken, refused, rule)
	resp, err := hc.Get("https://node/v1/alerts/state")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	state, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Printf("state: %d bytes\n", len(bytes.TrimSpace(state)))
	return nil
}

// serveOversized serves the member's stream as a modified labpool would:
// a frame with an alert forged about another machine, records of unknown
// kinds and one over its cap, then a frame with a good record.
func serveOversized(dir, lab1 string, id *peer.Identity, cfg transport.Config, log *slog.Logger) error {
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		return err
	}
	self := id.ID.String()
	top, err := db.Cursor(context.Background(), self)
	db.Close()
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	rec := func(n uint64, kind, key string, data string) store.Record {
		return store.Record{Origin: self, Seq: top + n, Kind: kind, Key: key, Time: now, Data: json.RawMessage(data)}
	}
	forged := fmt.Sprintf(`{"id":%q,"node":%q,"rule":"gpu-temp","severity":"critical","gpu":0,"message":%q,"value":99,"fired_at":%q,"cleared_at":null,"muted":false}`,
		forgedAlertID, lab1, forgedMarker, now.Format(time.RFC3339Nano))
	frames := []replica.Frame{
		{Records: []store.Record{
			rec(1, schema.KindAlert, forgedAlertID, forged),
			rec(2, "junk", "", fmt.Sprintf(`{"m":%q}`, junkMarker)),
			rec(3, schema.KindAlertRules, "", fmt.Sprintf(`{"m":%q,"pad":%q}`, oversizedMarker, strings.Repeat("x", 2<<20))),
		}},
		{Records: []store.Record{rec(4, schema.KindJob, "j-after", fmt.Sprintf(`{"id":"j-after","name":%q}`, afterMarker))}},
	}
	ep, err := transport.New(id, cfg, log)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(replica.StreamPath, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(os.Stderr, "a follower connected:", r.RemoteAddr, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(w)
		for _, f := range frames {
			if err := enc.Encode(f); err != nil {
				return
			}
		}
		for {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
			if _, err := w.Write([]byte("{}\n")); err != nil {
				return
			}
		}
	})
	fmt.Printf("serving oversized records as %s from seq %d\n", self, top+1)
	return ep.Serve(context.Background(), mux)
}
