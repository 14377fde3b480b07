package alerting

import (
	"context"
	"log/slog"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
)

// OpenMachine opens the machine self's alert rules, evaluator and
// webhook: they read the job manager's grants, the shared folders and the
// members' liveness (peers), name its own jobs and the Slurm jobs on its
// GPUs (sp), and post as this machine's policy says (`labpool policy
// --webhook`, `--webhook-private`).
func OpenMachine(ctx context.Context, self peer.ID, name string, db *store.DB, p Pool, peers *replica.Peers,
	jm *jobs.Manager, sp *app.SlurmWatch, shares Shares, nodes NodeCaller, policy func() jobs.Policy,
	log *slog.Logger) *Alerting {
	in := NewInputs(self.String(), db, jm.Ledger().Granted, shares, p, peers)
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
	return Open(ctx, Config{Self: self, Name: name, Nodes: nodes, WebhookPolicy: webhook, Live: peers}, db, p, in, log)
}
