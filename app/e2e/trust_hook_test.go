//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// hookPeerEnv runs this test binary as a device asking a machine's peer
// API for the webhook (see init).
const hookPeerEnv = "LABPOOL_E2E_HOOK_PEER"

func init() {
	if v := os.Getenv(hookPeerEnv); v != "" {
		if err := askWebhook(strings.Split(v, "|")); err != nil {
			fmt.Fprintln(os.Stderr, "ask the webhook:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// askWebhook asks the machine args[1] at args[2] for GET /v1/alerts/webhook
// with the identity of the data directory args[0], and prints the status
// and the body.
func askWebhook(args []string) error {
	id, err := peer.LoadOrCreate(args[0])
	if err != nil {
		return err
	}
	cfg := transport.DefaultConfig()
	cfg.Listen = ":0" // beside the device's own daemon
	ep, err := transport.New(id, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	target, err := peer.ParseID(args[1])
	if err != nil {
		return err
	}
	resp, err := ep.Client(target, []string{args[2]}).Get("https://node/v1/alerts/webhook")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s\n", resp.StatusCode, body)
	return nil
}

// peerWebhook asks target's machine for the webhook as h's device.
func peerWebhook(t *testing.T, h, target *host, targetID string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", h.ns, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), hookPeerEnv+"="+strings.Join([]string{h.data, targetID, target.ip + ":7420"}, "|"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ask %s for the webhook as %s: %v\n%s", target.name, h.name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestTrustHook: the webhook URL once went to every machine of the pool,
// and any member's device could ask a machine for it. Now only owners' and
// admins' machines receive it: a member's device asking is refused, naming
// the rule; a member's machine holds none; and its alerts still reach the
// webhook, once each, posted by the owner's machine under its name.
func TestTrustHook(t *testing.T) {
	l := newLAN(t, "gpu1", "member", "chat")
	gpu1, member, chat := l.host("gpu1"), l.host("member"), l.host("chat")
	member.env = append(member.env, "LABPOOL_SIMULATE_GPUS=1") // gpu1 has none: every gpu-temp alert is the member's
	for _, h := range []*host{gpu1, member} {
		h.agent()
	}
	ids := map[*host]string{}
	for _, h := range []*host{gpu1, member} {
		h.waitDaemon()
		s, err := h.client().Self(context.Background())
		if err != nil {
			t.Fatalf("%s: self: %v", h.name, err)
		}
		ids[h] = s.ID
	}
	mustCLI(t, member, "pool", "join", lastLine(mustCLI(t, gpu1, "pool", "create")), gpu1.ip+":7420")
	waitFor(t, 30*time.Second, "gpu1 live on the member's machine", func() error { return liveNodes(member, "gpu1") })
	waitFor(t, 30*time.Second, "the member's machine live on gpu1", func() error { return liveNodes(gpu1, "member") })

	chatDir := recorderOn(t, chat, "0.0.0.0", 8099, "")
	mustCLI(t, gpu1, "policy", "--webhook-private", "allow") // the chat is on the LAN
	hook := "http://" + chat.ip + ":8099/hook"
	if out := mustCLI(t, gpu1, "alerts", "webhook", hook); !strings.Contains(out, "webhook set; set on gpu1") || strings.Contains(out, "member") {
		t.Errorf("alerts webhook %s: %q; want it set on gpu1 alone", hook, out)
	}

	t.Run("a member's device asking for the URL is refused", func(t *testing.T) {
		out := peerWebhook(t, member, gpu1, ids[gpu1])
		if !strings.HasPrefix(out, "403 ") || !strings.Contains(out, alerts.RuleWebhookHolders) || strings.Contains(out, hook) {
			t.Errorf("the member's device asks gpu1: %s; want 403 naming the rule", out)
		}
	})

	t.Run("the member's machine holds no URL", func(t *testing.T) {
		out := peerWebhook(t, gpu1, member, ids[member])
		var w alerts.WebhookSetting
		if !strings.HasPrefix(out, "200 ") || json.Unmarshal([]byte(strings.TrimPrefix(out, "200 ")), &w) != nil || w.URL != "" {
			t.Errorf("gpu1 asks the member's machine: %s; want it to hold no URL", out)
		}
		waitFor(t, 20*time.Second, "the member hears a webhook is set", func() error {
			out := mustCLI(t, member, "alerts", "webhook")
			if !strings.Contains(out, "a webhook is set") || strings.Contains(out, hook) {
				return fmt.Errorf("alerts webhook: %q", out)
			}
			return nil
		})
	})

	t.Run("the member's alerts are posted once each, by the relay", func(t *testing.T) {
		// posts is what the chat got about the member's gpu-temp alerts:
		// alert ID -> states posted, in order.
		posts := func() map[string][]string {
			out := map[string][]string{}
			for _, r := range requests(chatDir) {
				body, ok := strings.CutPrefix(r, "POST /hook\n")
				var p alerts.WebhookPayload
				if !ok || json.Unmarshal([]byte(body), &p) != nil || p.Alert.Rule != alerts.RuleGPUTemp {
					continue
				}
				if p.NodeName != "member" || p.Alert.Node != ids[member] {
					t.Errorf("a post names %q (%s), want the member's machine", p.NodeName, p.Alert.Node)
				}
				out[p.Alert.ID] = append(out[p.Alert.ID], p.State)
			}
			return out
		}
		temp := func(threshold string, want func(map[string][]string) bool) {
			t.Helper()
			mustCLI(t, gpu1, "alerts", "set", "gpu-temp", "--threshold", threshold, "--for", "1s")
			waitFor(t, 60*time.Second, "the chat's posts after threshold "+threshold, func() error {
				if p := posts(); !want(p) {
					return fmt.Errorf("posts %v", p)
				}
				return nil
			})
		}
		// Simulated GPUs run at 35-75 °C: at 10 every GPU's alert fires,
		// at 99 each clears, at 10 again new ones fire.
		temp("10", func(p map[string][]string) bool { return len(p) > 0 })
		temp("99", func(p map[string][]string) bool {
			for _, states := range p {
				if !slices.Contains(states, "cleared") {
					return false
				}
			}
			return true
		})
		temp("10", func(p map[string][]string) bool {
			for _, states := range p {
				if !slices.Contains(states, "cleared") {
					return true
				}
			}
			return false
		}) // a later post: any duplicate of the earlier ones came before it
		cleared := 0
		for id, states := range posts() {
			switch strings.Join(states, ",") {
			case "firing,cleared":
				cleared++
			case "firing":
			default:
				t.Errorf("alert %s posted %v; want each firing and clearing once", id, states)
			}
		}
		if cleared == 0 {
			t.Errorf("no alert posted as fired and cleared: %v", posts())
		}
	})
}
