package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
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
	return nil
}

// WebhookPayload is the JSON a machine POSTs for each firing and clearing:
// Text for chats that show it (Slack, Mattermost, Rocket.Chat), the alert
// for scripts.
type WebhookPayload struct {
	Text     string `json:"text"`
	NodeName string `json:"node_name"`
	State    string `json:"state"` // "firing" or "cleared"
	Alert    Alert  `json:"alert"`
}

// Webhook posts alerts to the pool's webhook, one at a time, each within
// Timeout, from a queue that drops what overflows: Send never blocks the
// evaluator.
type Webhook struct {
	name    string // this machine's name, for the text
	client  *http.Client
	log     *slog.Logger
	queue   chan Alert
	timeout time.Duration

	mu  sync.Mutex // guards url
	url string
}

// NewWebhook returns a webhook sender for the machine called name; client
// nil means http.DefaultClient.
func NewWebhook(name string, client *http.Client, log *slog.Logger) *Webhook {
	if client == nil {
		client = http.DefaultClient
	}
	return &Webhook{name: name, client: client, log: log, queue: make(chan Alert, 64), timeout: 10 * time.Second}
}

// SetURL sets (or, empty, removes) the URL alerts are posted to.
func (w *Webhook) SetURL(u string) error {
	if err := CheckWebhookURL(u); err != nil {
		return err
	}
	w.mu.Lock()
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

// Send queues a for posting; without a URL, or with the queue full, a is
// dropped. It never blocks.
func (w *Webhook) Send(a Alert) {
	if w.URL() == "" {
		return
	}
	select {
	case w.queue <- a:
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
		case a := <-w.queue:
			if err := w.post(ctx, a); err != nil {
				w.log.Warn("post alert to the webhook", "alert", a.ID, "err", err)
			}
		}
	}
}

func (w *Webhook) post(ctx context.Context, a Alert) error {
	u := w.URL()
	if u == "" {
		return nil
	}
	body, err := json.Marshal(payload(w.name, a))
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
	p := WebhookPayload{NodeName: name, State: "firing", Alert: a}
	if !a.Active() {
		p.State = "cleared"
	}
	p.Text = fmt.Sprintf("[%s] %s on %s: %s", a.Severity, a.Rule, name, a.Message)
	if !a.Active() {
		p.Text = fmt.Sprintf("[cleared] %s on %s: %s", a.Rule, name, a.Message)
	}
	return p
}
