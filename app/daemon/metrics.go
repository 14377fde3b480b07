package daemon

import (
	"context"
	"log/slog"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/metrics"
)

// metricsPart serves this machine's GPU metrics for Prometheus on
// Config.Metrics; the list holds it only where that is set.
type metricsPart struct {
	cfg        metrics.Config
	tel        *agent.Telemetry
	jobs       *jobs.Manager
	memberName func(string) string
	log        *slog.Logger
}

func newMetrics(c Config, tel *agent.Telemetry, jm *jobs.Manager, memberName, person func(string) string, log *slog.Logger) *metricsPart {
	cfg := metrics.Config{Addr: c.Metrics, AllowRemote: c.MetricsAllowRemote, Hosts: c.MetricsHosts,
		Hostname: tel.Info().Host.Hostname, Person: person}
	return &metricsPart{cfg: cfg, tel: tel, jobs: jm, memberName: memberName, log: log}
}

// Run serves until ctx is cancelled.
func (m *metricsPart) Run(ctx context.Context) error {
	srv, err := metrics.New(m.cfg, m.tel, m.jobOwner, m.memberName, m.log)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// jobOwner is the owner (member ID) of a job of this machine, "" when
// there is no such job.
func (m *metricsPart) jobOwner(id string) string {
	j, err := m.jobs.Get(id)
	if err != nil {
		return ""
	}
	return j.Owner
}
