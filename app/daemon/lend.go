package daemon

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
	"github.com/labpool/labpool/sync/schema"
	"golang.org/x/sync/errgroup"
)

// runLend lends this machine to the pool as its policy says (node/lend)
// until ctx is cancelled: the owner-present signals are the owner's own
// GPU processes, logind's idle hint of the desktop, and the window's "I'm
// using it" switch; the guests are the job manager's, the owner's grant
// goes into its ledger. What the lender says is published as this
// machine's lend record. A machine that runs no containers lends nothing.
func (d *Daemon) runLend(ctx context.Context) error {
	if d.rt == nil || d.jobs == nil {
		return nil
	}
	cfg := lend.DefaultConfig()
	cfg.Node, cfg.Log = d.id.ID.String(), d.log
	cfg.Policy = func() lend.Policy { return d.jobs.Policy().Lend }
	cfg.GPUs = func() []string {
		var uuids []string
		for _, g := range d.telem.Info().GPUs {
			uuids = append(uuids, g.UUID)
		}
		return uuids
	}
	l := lend.New(cfg, d.jobs.Policy().Lend, jobs.LendGuests{M: d.jobs}, d.jobs.Ledger(),
		d.jobs.OwnerGPUProcesses, lend.NewLogind().Signal)
	if v, ok, err := d.db.Setting(ctx, schema.SettingLendUsing); err != nil {
		d.log.Warn("read the \"I'm using it\" switch: off until set", "err", err)
	} else if ok && v == "true" {
		l.SetUsing(true)
	}
	d.svc.SetLending(keptSwitch{l, d})
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return l.Run(ctx) })
	g.Go(func() error { return d.publishLend(ctx, l) })
	return g.Wait()
}

// keptSwitch is the lender with its "I'm using it" switch kept in the
// local settings: an owner who said so is not lent out by a restart.
type keptSwitch struct {
	*lend.Lender
	d *Daemon
}

// SetUsing implements app.Lending.
func (k keptSwitch) SetUsing(on bool) {
	k.Lender.SetUsing(on)
	if err := k.d.db.SetSetting(context.Background(), schema.SettingLendUsing, strconv.FormatBool(on)); err != nil {
		k.d.log.Warn("keep the \"I'm using it\" switch: it holds until the agent restarts", "err", err)
	}
}

// publishLend writes the lend record whenever what the lender says
// changes (looked at every second).
func (d *Daemon) publishLend(ctx context.Context, l *lend.Lender) error {
	var last []byte
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		data, err := json.Marshal(l.State().Status.Public())
		if err == nil && string(data) != string(last) {
			if _, err := d.db.Append(ctx, d.id.ID.String(), app.KindLend, "", time.Now(), data); err != nil {
				d.log.Warn("write the lend record", "err", err)
			} else {
				last = data
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
