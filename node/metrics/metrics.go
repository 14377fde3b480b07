// Package metrics serves this machine's GPU readings as Prometheus text
// exposition (format 0.0.4), named and labelled as NVIDIA's dcgm-exporter
// names them (DCGM_FI_DEV_GPU_UTIL{gpu, UUID, device, modelName, Hostname}),
// so a lab's existing Grafana dashboards work, plus the labels job, owner,
// owner_name and person (the labpool job holding the GPU, the device that
// launched it, that device's name, and the person whose device it is: a
// lab sums a person's GPUs by person) and a few
// labpool_ metrics of its own (health, throttling, XID count).
//
// The text is written by hand (Write): no client library. The job and owner
// labels say who uses which GPU, so Server serves on a loopback address
// only, unless Config.AllowRemote (CheckAddr states the rule).
//
// Server.Run serves until ctx is cancelled and returns after its goroutine
// has exited.
package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrNotLoopback refuses a listen address that is not loopback.
var ErrNotLoopback = errors.New("metrics_loopback_only")

// RuleLoopback is the rule a non-loopback address breaks, as said to users.
const RuleLoopback = "the metrics carry job and owner labels, so they are served on a loopback address " +
	"(127.0.0.1, ::1, localhost) only, unless --metrics-allow-remote is given"

// CheckAddr refuses addr unless it is HOST:PORT with a loopback host, or
// allowRemote is set.
func CheckAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("metrics address %q: want HOST:PORT, e.g. 127.0.0.1:9400", addr)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("%w: refusing to serve metrics on %s (%s): %s", ErrNotLoopback, addr, host, RuleLoopback)
}
