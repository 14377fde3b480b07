package daemon

import (
	"context"
	"github.com/labpool/labpool/app"
	"log/slog"

	"github.com/labpool/labpool/app/alerting"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
)

// openAlerts opens this machine's alert rules, evaluator and webhook: they
// read the job manager's grants, the shared folders and the members'
// liveness, name its own jobs and the Slurm jobs on its GPUs, and post as
// this machine's policy says (`labpool policy --webhook`,
// `--webhook-private`).
func openAlerts(ctx context.Context, self peer.ID, name string, db *store.DB, pm *pool.Manager, peers *replica.Peers,
	jm *jobs.Manager, sp *app.SlurmWatch, reg *folders.Registry, nodes alerting.NodeCaller, policy func() jobs.Policy,
	log *slog.Logger) *alerting.Alerting {
	in := alerting.NewInputs(self.String(), db, jm.Ledger().Granted, reg, pm, peers)
	in.SetJobs(func(id string) (jobs.Job, error) {
		j, err := jm.Get(id)
		if err == nil {
			return j, nil
		}
		if sj, ok := sp.Job(id); ok {
			return sj, nil
		}
		return jobs.Job{}, err
	})
	webhook := func() alerts.WebhookPolicy {
		p := policy()
		return alerts.WebhookPolicy{Off: p.WebhookOff, Private: p.WebhookPrivate}
	}
	return alerting.Open(ctx, alerting.Config{Self: self, Name: name, Nodes: nodes, WebhookPolicy: webhook, Live: peers},
		db, pm, in, log)
}
