package daemon

import "github.com/labpool/labpool/node/alerts"

// webhookPolicy is this machine's say over the pool's webhook, from its
// policy (`labpool policy --webhook`, `--webhook-private`).
func (d *Daemon) webhookPolicy() alerts.WebhookPolicy {
	p := d.jobs.Policy()
	return alerts.WebhookPolicy{Off: p.WebhookOff, Private: p.WebhookPrivate}
}
