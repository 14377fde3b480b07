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
}

// checkMetrics refuses a --metrics address the metrics server would refuse,
// before the daemon starts: a usage error naming the rule.
func checkMetrics(o DaemonOptions) error {
	if o.Metrics == "" {
		if o.MetricsAllowRemote {
			return usageError{errors.New("--metrics-allow-remote needs --metrics ADDR")}
		}
		return nil
	}
	if err := metrics.CheckAddr(o.Metrics, o.MetricsAllowRemote); err != nil {
		return usageError{err}
	}
	return nil
}
