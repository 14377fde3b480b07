package cli

import (
	"errors"

	"github.com/labpool/labpool/node/metrics"
	"github.com/spf13/cobra"
)

// metricsFlags are the agent's flags for Prometheus metrics.
func metricsFlags(c *cobra.Command, o *DaemonOptions) {
	c.Flags().StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics of this machine's GPUs (dcgm-exporter names) at http://ADDR/metrics, e.g. 127.0.0.1:9400")
	c.Flags().BoolVar(&o.MetricsAllowRemote, "metrics-allow-remote", false, "allow --metrics on a non-loopback address (the metrics name each GPU's job and owner)")
	c.Flags().StringArrayVar(&o.MetricsHosts, "metrics-host", nil, "with --metrics-allow-remote, a DNS name Prometheus calls this machine by (repeatable); IP addresses, localhost and the host name are always accepted")
}

// checkMetrics refuses a --metrics address the metrics server would refuse,
// before the daemon starts: a usage error naming the rule.
func checkMetrics(o DaemonOptions) error {
	if o.Metrics == "" {
		if o.MetricsAllowRemote || len(o.MetricsHosts) > 0 {
			return usageError{errors.New("--metrics-allow-remote and --metrics-host need --metrics ADDR")}
		}
		return nil
	}
	if len(o.MetricsHosts) > 0 && !o.MetricsAllowRemote {
		return usageError{errors.New("--metrics-host needs --metrics-allow-remote: on loopback only loopback addresses and localhost name the endpoint")}
	}
	if err := metrics.CheckAddr(o.Metrics, o.MetricsAllowRemote); err != nil {
		return usageError{err}
	}
	return nil
}
