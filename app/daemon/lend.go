package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
	"golang.org/x/sync/errgroup"
)

// lendPart lends this machine to the pool as its policy says (node/lend):
// the owner-present signals are the owner's own GPU processes, logind's
// idle hint of the desktop, and the window's "I'm using it" switch; the
// guests are the job manager's, the owner's grant goes into its ledger.
// What the lender says is published as this machine's lend record.
type lendPart struct {
	l    *lend.Lender
	self string
	db   *store.DB
	log  *slog.Logger
}

// openLend builds the lender, with the switch as the local settings keep
// it, and hands it to the service (the local API's switch).
func openLend(ctx context.Context, self string, db *store.DB, jm *jobs.Manager, tel *agent.Telemetry, svc *app.Service, log *slog.Logger) *lendPart {
	cfg := lend.DefaultConfig()
	cfg.Node, cfg.Log = self, log
	cfg.Policy = func() lend.Policy { return jm.Policy().Lend }
	cfg.GPUs = func() []string {
		var uuids []string
		for _, g := range tel.Info().GPUs {
			uuids = append(uuids, g.UUID)
		}
		return uuids
	}
	p := &lendPart{self: self, db: db, log: log,
		l: lend.New(cfg, jm.Policy().Lend, jobs.LendGuests{M: jm}, jm.Ledger(), jm.OwnerGPUProcesses, lend.NewLogind().Signal)}
	if v, ok, err := db.Setting(ctx, schema.SettingLendUsing); err != nil {
		log.Warn("read the \"I'm using it\" switch: off until set", "err", err)
	} else if ok && v == "true" {
		p.l.SetUsing(true)
	}
	svc.SetLending(keptSwitch{p})
	return p
}

func (p *lendPart) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.l.Run(ctx) })
	g.Go(func() error { return p.publish(ctx) })
	return g.Wait()
}

// keptSwitch is the lender with its "I'm using it" switch kept in the
// local settings: an owner who said so is not lent out by a restart.
type keptSwitch struct{ *lendPart }

// SetUsing implements app.Lending.
func (k keptSwitch) SetUsing(on bool) {
	k.l.SetUsing(on)
	if err := k.db.SetSetting(context.Background(), schema.SettingLendUsing, strconv.FormatBool(on)); err != nil {
		k.log.Warn("keep the \"I'm using it\" switch: it holds until the agent restarts", "err", err)
	}
}

// State implements app.Lending.
func (k keptSwitch) State() lend.State { return k.l.State() }

// publish writes the lend record whenever what the lender says changes
// (looked at every second).
func (p *lendPart) publish(ctx context.Context) error {
	var last []byte
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		data, err := json.Marshal(p.l.State().Status.Public())
		if err == nil && string(data) != string(last) {
			if _, err := p.db.Append(ctx, p.self, app.KindLend, "", time.Now(), data); err != nil {
				p.log.Warn("write the lend record", "err", err)
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
