package daemon

import (
	"context"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// evictTimeout bounds the work of ending one removed device's jobs here.
const evictTimeout = 30 * time.Second

// removed is the pool's hook for a device removed from the pool (by this
// machine or learned from a member): its connections close at once, so its
// streams, tunnels and copies stop; its jobs here end in runEvictions. It
// does not block.
func (d *Daemon) removed(id peer.ID) {
	if id == d.id.ID {
		d.log.Warn("this machine was removed from the pool: the members refuse it from now on")
		return // its own jobs and copies here are its own
	}
	d.ep.Disconnect(id)
	d.cancelCopiesOf(id.String())
	select {
	case d.evictions <- id:
	default:
		d.log.Warn("eviction queue full: the removed device's jobs stop at the next removal", "peer", id)
	}
}

// runEvictions ends the jobs of removed devices: queued ones are cancelled
// and running ones stopped, their records kept.
func (d *Daemon) runEvictions(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-d.evictions:
			ectx, cancel := context.WithTimeout(ctx, evictTimeout)
			cancelled, stopped, err := d.jobs.Evict(ectx, id.String())
			cancel()
			if err != nil {
				d.log.Warn("end the jobs of a removed device", "peer", id, "err", err)
			} else if cancelled+stopped > 0 {
				d.log.Info("ended the jobs of a removed device", "peer", id, "cancelled", cancelled, "stopped", stopped)
			}
		}
	}
}
