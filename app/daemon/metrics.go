package daemon

import (
	"context"

	"github.com/labpool/labpool/node/metrics"
)

// runMetrics serves this machine's GPU metrics for Prometheus on
// Config.Metrics until ctx is cancelled.
func (d *Daemon) runMetrics(ctx context.Context) error {
	cfg := metrics.Config{Addr: d.cfg.Metrics, AllowRemote: d.cfg.MetricsAllowRemote,
		Hosts: d.cfg.MetricsHosts, Hostname: d.telem.Info().Host.Hostname}
	srv, err := metrics.New(cfg, d.telem, d.jobOwner, d.memberName, d.log)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// jobOwner is the owner (member ID) of a job of this machine, "" when
// there is no such job.
func (d *Daemon) jobOwner(id string) string {
	if d.jobs == nil {
		return ""
	}
	j, err := d.jobs.Get(id)
	if err != nil {
		return ""
	}
	return j.Owner
}

// memberName is a member's name in the pool, "" when it is not one.
func (d *Daemon) memberName(id string) string {
	st, _ := d.pool.Snapshot()
	return st.MemberName(id)
}
