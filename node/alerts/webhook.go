package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CheckWebhookURL refuses a webhook that is not an http or https URL with
// a host (a file:, a unix socket or a bare path would let the pool's admins
// reach what they should not); empty means no webhook.
func CheckWebhookURL(raw string) error {
	if raw == "" {
		return nil
	}
	if len(raw) > 2048 {
		return fmt.Errorf("webhook URL: at most 2048 characters")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("webhook URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("webhook URL %q: only http and https are allowed, not %q", raw, u.Scheme)
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("webhook URL %q: needs a host, e.g. https://chat.example.org/hooks/...", raw)
	}
	// An address no machine posts to is refused now; a name, and a private
	// address (each machine's policy), when each machine dials it.
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if err := CheckDestination(ip, true); err != nil {
			return fmt.Errorf("webhook URL: %w", err)
		}
	}
	return nil
}

// WebhookPayload is the JSON a machine POSTs for each firing and clearing:
// Text for chats that show it (Slack, Mattermost, Rocket.Chat), the alert
// for scripts.
type WebhookPayload struct {
	Text     string `json:"text"`
	NodeName string `json:"node_name"`
	State    string `json:"state"` // "firing" or "cleared"
	// Change is what this post tells of the incident: "fired" (or, muted
	// until now, unmuted: never posted before), "raised" or "lowered" (its
	// severity changed; Alert.Was is the one before), or "cleared".
	Change string `json:"change"`
	Alert  Alert  `json:"alert"`
}

// Webhook posts alerts to the pool's webhook, one at a time, each within
// Timeout, from a queue that drops what overflows: Send never blocks the
// evaluator. Its posts follow no redirect and reach no address
// CheckDestination refuses, checked at dial time; this machine's
// WebhookPolicy may turn them off or allow private addresses.
type Webhook struct {
	name    string // this machine's name, for the text
	client  *http.Client
	policy  func() WebhookPolicy
	check   func(ip netip.Addr, private bool) error // CheckDestination; tests on loopback replace it
	log     *slog.Logger
	queue   chan posted
	timeout time.Duration

	mu      sync.Mutex // guards url and refused
	url     string
	refused string // the last refusal logged, logged again only once the URL or the refusal changes
}

// NewWebhook returns a webhook sender for the machine called name; policy
// (nil: post, public addresses only) is read at each alert.
func NewWebhook(name string, policy func() WebhookPolicy, log *slog.Logger) *Webhook {
	if policy == nil {
		policy = func() WebhookPolicy { return WebhookPolicy{} }
	}
	w := &Webhook{name: name, policy: policy, check: CheckDestination, log: log, queue: make(chan posted, 64), timeout: 10 * time.Second}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: w.control}
	w.client = &http.Client{
		// No proxy: the dialler checks the webhook's own address.
		Transport: &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConns: 2, IdleConnTimeout: time.Minute, ForceAttemptHTTP2: true},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("%w: the webhook answered with a redirect to %s (rule: %s: a webhook post follows no redirect; "+
				"set the final URL)", ErrWebhookRefused, req.URL.Redacted(), WebhookRuleRedirect)
		},
	}
	return w
}

// SetURL sets (or, empty, removes) the URL alerts are posted to.
func (w *Webhook) SetURL(u string) error {
	if err := CheckWebhookURL(u); err != nil {
		return err
	}
	w.mu.Lock()
	if u != w.url {
		w.refused = ""
	}
	w.url = u
	w.mu.Unlock()
	return nil
}

// URL returns the URL alerts are posted to, "" for none.
func (w *Webhook) URL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.url
}

// posted is one alert to post, and the name of the machine it is about.
type posted struct {
	name  string
	alert Alert
}

// Send queues a, this machine's alert, for posting; without a URL, with
// posting turned off by this machine's policy, or with the queue full, a
// is dropped. It never blocks.
func (w *Webhook) Send(a Alert) { w.SendAs(w.name, a) }

// SendAs is Send for the alert of the machine called name, which does not
// hold the URL and whose alerts this machine relays.
func (w *Webhook) SendAs(name string, a Alert) {
	if w.URL() == "" || w.policy().Off {
		return
	}
	select {
	case w.queue <- posted{name, a}:
	default:
		w.log.Warn("alert webhook falls behind: an alert was not posted", "alert", a.ID)
	}
}

// Run posts the queued alerts until ctx is cancelled.
func (w *Webhook) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case p := <-w.queue:
			if err := w.post(ctx, p); err != nil {
				w.logPostError(p.alert, err)
			}
		}
	}
}

// logPostError logs a failed post; a refusal once, until the URL or the
// refusal changes (every alert would repeat it).
func (w *Webhook) logPostError(a Alert, err error) {
	if errors.Is(err, ErrWebhookRefused) {
		msg := refusalIn(err).Error()
		w.mu.Lock()
		seen := w.refused == msg
		w.refused = msg
		w.mu.Unlock()
		if !seen {
			w.log.Warn("alert webhook refused: alerts from this machine are not posted", "err", msg)
		}
		return
	}
	w.log.Warn("post alert to the webhook", "alert", a.ID, "err", err)
}

// refusalIn is the refusal inside err, without the url and net wrappers
// (which repeat the URL, a secret, and the addresses).
func refusalIn(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Unwrap(e) == ErrWebhookRefused {
			return e
		}
	}
	return err
}

func (w *Webhook) post(ctx context.Context, p posted) error {
	u := w.URL()
	if u == "" {
		return nil
	}
	body, err := json.Marshal(payload(p.name, p.alert))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err // without the URL, a secret of the lab's chat
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

func payload(name string, a Alert) WebhookPayload {
	p := WebhookPayload{NodeName: name, State: "firing", Change: "fired", Alert: a}
	p.Text = fmt.Sprintf("[%s] %s on %s: %s", a.Severity, a.Rule, name, a.Message)
	switch {
	case !a.Active():
		p.State, p.Change = "cleared", "cleared"
		p.Text = fmt.Sprintf("[cleared] %s on %s: %s", a.Rule, name, a.Message)
	case a.Was != "":
		p.Change = "lowered"
		if severityRank(a.Severity) < severityRank(a.Was) {
			p.Change = "raised"
		}
		p.Text = fmt.Sprintf("[%s, %s from %s] %s on %s: %s", a.Severity, p.Change, a.Was, a.Rule, name, a.Message)
	}
	return p
}
