package alerting

import "github.com/labpool/labpool/app"

// mayHold says whether this machine's device may hold the pool's webhook
// URL: it is an owner or admin of the pool, or the machine is in none.
// A member's or viewer's machine, or a removed one, holds none.
func (a *Alerting) mayHold() bool {
	if a.pool == nil {
		return true
	}
	if role, ok := a.pool.Role(a.cfg.Self); ok {
		return app.HoldsWebhook(string(role), true)
	}
	_, inPool := a.pool.Snapshot()
	return app.HoldsWebhook("", inPool) // removed: none
}

// dropWebhook removes the URL this machine holds when its device may not
// hold one (it held it from before that rule, or it was demoted): it
// stops posting, and a relay posts its alerts.
func (a *Alerting) dropWebhook() {
	if ok, err := a.m.DropWebhook(); err != nil {
		a.log.Warn("drop the alert webhook this machine may not hold", "err", err)
	} else if ok {
		a.log.Info("dropped the alert webhook: only owners' and admins' machines hold it; an owner's or admin's machine posts this one's alerts")
	}
}
